//go:build !unix

package hub

// lockBlob is a no-op where flock is missing.
func lockBlob(string) (func(), error) { return func() {}, nil }
