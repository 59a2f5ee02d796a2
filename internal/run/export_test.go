package run

// Exported for the external tests.
var (
	LockDir           = lockDir
	LegacyFingerprint = legacyFingerprint
)
