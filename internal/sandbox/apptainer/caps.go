package apptainer

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// capNames are the Linux capabilities by number.
var capNames = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE",
	"CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER",
	"CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE", "CAP_SYS_PACCT",
	"CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE", "CAP_SYS_TIME",
	"CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL",
	"CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM",
	"CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE",
}

// MinimalCaps are what a hardened box started as root keeps, as the docker
// backend's: owning and changing any file, switching users, signalling any
// process, binding low ports.
var MinimalCaps = []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_NET_BIND_SERVICE"}

// MissingCaps lists the capabilities (of those Apptainer knows) that a
// permitted set, as /proc/self/status prints it (CapPrm, hex), lacks. Root
// in some VMs lacks CAP_SYS_RESOURCE; Apptainer asks for the full set and
// fails with "Requesting capability set ... while permitted capability set
// is ..." unless those are dropped.
func MissingCaps(capPrm string) ([]string, error) {
	v, err := strconv.ParseUint(strings.TrimSpace(capPrm), 16, 64)
	if err != nil {
		return nil, fmt.Errorf("capability set %q: %w", capPrm, err)
	}
	var out []string
	for i, n := range capNames {
		if v&(1<<uint(i)) == 0 {
			out = append(out, n)
		}
	}
	return out, nil
}

// ownMissingCaps is MissingCaps for this process; for a non-root user it
// is empty (Apptainer asks for no capabilities then).
func ownMissingCaps() []string {
	if os.Geteuid() != 0 {
		return nil
	}
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "CapPrm:"); ok {
			caps, err := MissingCaps(v)
			if err != nil {
				return nil
			}
			return caps
		}
	}
	return nil
}

// dropCaps reads the drop-caps setting: DropCapsAuto (or empty), "none", or
// a comma-separated list of names (CAP_ optional).
func dropCaps(v string) ([]string, error) {
	switch strings.TrimSpace(v) {
	case "", DropCapsAuto:
		return ownMissingCaps(), nil
	case "none":
		return nil, nil
	}
	var out []string
	for f := range strings.SplitSeq(v, ",") {
		c, err := capName(f)
		if err != nil {
			return nil, fmt.Errorf("--%s %q: %w", ParamDropCaps, v, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// capName normalises a capability name ("sys_ptrace" → "CAP_SYS_PTRACE").
func capName(s string) (string, error) {
	c := strings.ToUpper(strings.TrimSpace(s))
	if !strings.HasPrefix(c, "CAP_") {
		c = "CAP_" + c
	}
	if !slices.Contains(capNames, c) {
		return "", fmt.Errorf("unknown capability %q", s)
	}
	return c, nil
}

// boxDropCaps is what one box drops: the backend's list, and for a hardened
// root box every capability but MinimalCaps and those added.
func boxDropCaps(base []string, hardened, root bool, add []string) ([]string, error) {
	drop := slices.Clone(base)
	if !hardened || !root {
		return drop, nil
	}
	keep := slices.Clone(MinimalCaps)
	for _, a := range add {
		c, err := capName(a)
		if err != nil {
			return nil, fmt.Errorf("security cap_add: %w", err)
		}
		keep = append(keep, c)
	}
	for _, c := range capNames {
		if !slices.Contains(keep, c) && !slices.Contains(drop, c) {
			drop = append(drop, c)
		}
	}
	return drop, nil
}

func containsAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}
