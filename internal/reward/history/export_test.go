package history

// AuditBoxAt lets the tests audit a directory standing for a box's "/".
var AuditBoxAt = auditBoxAt
