package history

// AuditBoxAt lets the tests audit a directory standing for a box's "/".
var AuditBoxAt = auditBoxAt

// CopyChecksAt is a CopyChecks that searches a directory standing for a
// box's "/".
func CopyChecksAt(dir, root string) *CopyChecks { return &CopyChecks{Dir: dir, root: root} }
