// Package version reports the build's version, set at link time with
// -ldflags "-X github.com/swerve-dev/swerve/internal/version.Version=v1.2.3",
// else taken from the module's build information.
package version

import (
	"runtime/debug"
	"sync"
)

// Version is overridden at link time for releases.
var Version = ""

var once sync.Once

// String returns the version, e.g. "v0.1.0" or "devel (abc1234, dirty)".
func String() string {
	once.Do(func() {
		if Version != "" {
			return
		}
		Version = "devel"
		info, ok := debug.ReadBuildInfo()
		if !ok {
			return
		}
		if v := info.Main.Version; v != "" && v != "(devel)" {
			Version = v
			return
		}
		var rev, dirty string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
				if len(rev) > 12 {
					rev = rev[:12]
				}
			case "vcs.modified":
				if s.Value == "true" {
					dirty = ", dirty"
				}
			}
		}
		if rev != "" {
			Version = "devel (" + rev + dirty + ")"
		}
	})
	return Version
}
