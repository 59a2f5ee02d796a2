package docker

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// Capability bit numbers (linux/capability.h) of the ones the tests name.
var capBits = map[string]uint{
	"CHOWN": 0, "DAC_OVERRIDE": 1, "FOWNER": 3, "FSETID": 4, "KILL": 5, "SETGID": 6, "SETUID": 7,
	"NET_BIND_SERVICE": 10, "NET_RAW": 13, "SYS_PTRACE": 19, "SYS_ADMIN": 21, "MKNOD": 27,
}

func capMask(names ...string) uint64 {
	var m uint64
	for _, n := range names {
		m |= 1 << capBits[n]
	}
	return m
}

// boxStatus reads the Cap* and NoNewPrivs lines of a command's
// /proc/self/status in box.
func boxStatus(t *testing.T, box sandbox.Sandbox) map[string]string {
	t.Helper()
	res, err := box.Exec(context.Background(), sandbox.ExecRequest{Cmd: []string{"grep", "-E", "^(Cap|NoNewPrivs)", "/proc/self/status"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("read status: %+v %v", res, err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(res.Output)), "\n") {
		k, v, _ := strings.Cut(line, ":")
		out[k] = strings.TrimSpace(v)
	}
	return out
}

func hexMask(t *testing.T, s string) uint64 {
	t.Helper()
	m, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		t.Fatalf("capability mask %q: %v", s, err)
	}
	return m
}

func TestHarden(t *testing.T) {
	tests := []struct {
		name    string
		sec     sandbox.Security
		user    string
		drop    []string
		add     []string
		secOpts []string
	}{
		{"default", sandbox.Security{}, "", []string{"ALL"}, MinimalCaps, []string{"no-new-privileges"}},
		{"root by name", sandbox.Security{}, "root", []string{"ALL"}, MinimalCaps, []string{"no-new-privileges"}},
		{"root by number", sandbox.Security{}, "0:0", []string{"ALL"}, MinimalCaps, []string{"no-new-privileges"}},
		{"cap_add", sandbox.Security{CapAdd: []string{"SYS_PTRACE"}}, "", []string{"ALL"}, append(slices.Clone(MinimalCaps), "SYS_PTRACE"), []string{"no-new-privileges"}},
		{"non-root user keeps none", sandbox.Security{}, "1000:1000", []string{"ALL"}, nil, []string{"no-new-privileges"}},
		{"named user keeps none", sandbox.Security{}, "app", []string{"ALL"}, nil, []string{"no-new-privileges"}},
		{"non-root user with cap_add", sandbox.Security{CapAdd: []string{"NET_RAW"}}, "app", []string{"ALL"}, []string{"NET_RAW"}, []string{"no-new-privileges"}},
		{"unhardened", sandbox.Security{Unhardened: true}, "", nil, nil, nil},
		{"unhardened with cap_add", sandbox.Security{Unhardened: true, CapAdd: []string{"SYS_ADMIN"}}, "", nil, []string{"SYS_ADMIN"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hc container.HostConfig
			harden(&hc, tt.sec, tt.user)
			if !slices.Equal(hc.CapDrop, tt.drop) || !slices.Equal(hc.CapAdd, tt.add) || !slices.Equal(hc.SecurityOpt, tt.secOpts) {
				t.Errorf("harden: drop %v add %v opts %v; want %v %v %v", hc.CapDrop, hc.CapAdd, hc.SecurityOpt, tt.drop, tt.add, tt.secOpts)
			}
		})
	}
	// Adding must not change the shared default.
	if len(MinimalCaps) != 8 {
		t.Errorf("MinimalCaps changed to %v", MinimalCaps)
	}
}

func TestNumericUser(t *testing.T) {
	for _, tc := range []struct {
		user     string
		uid, gid int
		ok       bool
	}{
		{"", 0, -1, true},
		{"root", 0, -1, true},
		{"0", 0, -1, true},
		{"root:root", 0, -1, true},
		{"0:0", 0, 0, true},
		{"1000", 1000, -1, true},
		{"1000:1001", 1000, 1001, true},
		{"nobody", 0, 0, false},
		{"app:app", 0, 0, false},
		{"-1", 0, 0, false},
	} {
		uid, gid, ok := numericUser(tc.user)
		if ok != tc.ok || (ok && (uid != tc.uid || gid != tc.gid)) {
			t.Errorf("numericUser(%q) = %d, %d, %v; want %d, %d, %v", tc.user, uid, gid, ok, tc.uid, tc.gid, tc.ok)
		}
	}
}

// A box is hardened by default: minimal capabilities, no new privileges,
// a private socket directory; a raw socket, a device node or a mount fail.
func TestHardenedBox(t *testing.T) {
	b := testBackend(t, fmt.Sprintf("test-harden-%d", os.Getpid()))
	ctx := context.Background()
	sb, err := b.Open(ctx, sandbox.Spec{Image: testutil.TestImage()})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(ctx)
	box := sb.(*Box)
	st := boxStatus(t, box)
	want := capMask(MinimalCaps...)
	for _, k := range []string{"CapEff", "CapBnd", "CapPrm"} {
		if got := hexMask(t, st[k]); got != want {
			t.Errorf("%s = %#x, want %#x (%v)", k, got, want, MinimalCaps)
		}
	}
	if st["NoNewPrivs"] != "1" {
		t.Errorf("NoNewPrivs = %q, want 1", st["NoNewPrivs"])
	}
	insp, err := b.cli.ContainerInspect(ctx, box.ID(), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// (Podman reports the dropped capabilities one by one, Docker as ALL;
	// the status above is what counts.)
	if hc := insp.Container.HostConfig; !slices.Contains(hc.SecurityOpt, "no-new-privileges") {
		t.Errorf("host config: security opts %v", hc.SecurityOpt)
	}
	// What the dropped capabilities would allow fails.
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash(
		"mknod /tmp/dev c 1 3 2>/dev/null && echo mknod; mount -t tmpfs x /mnt 2>/dev/null && echo mount; " +
			"python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)' 2>/dev/null && echo raw; " +
			// what normal runs need still works: files of other users, chown, su to a user
			"install -d -o 65534 /tmp/other && touch /tmp/other/f && chown 65534 /tmp/other/f && setpriv --reuid 65534 --regid 65534 --clear-groups id -u")})
	if err != nil || string(res.Output) != "65534\n" {
		t.Errorf("in a hardened box: %q, %v; want only the unprivileged user's id", res.Output, err)
	}
	// The socket directory: ours, 0700, holding only this box's socket.
	fi, err := os.Stat(box.sockDir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 || fi.Sys().(*syscall.Stat_t).Uid != uint32(os.Geteuid()) {
		t.Errorf("socket directory %s: mode %v uid %d; want 0700 and ours", box.sockDir, fi.Mode().Perm(), fi.Sys().(*syscall.Stat_t).Uid)
	}
	ents, _ := os.ReadDir(box.sockDir)
	if len(ents) != 1 || ents[0].Name() != sockName {
		t.Errorf("socket directory holds %v, want only %s", ents, sockName)
	}
	// The box sees only its own directory.
	res, err = box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash("grep -c swerve-sock /proc/self/mountinfo; ls -A " + sockInBox)})
	if err != nil || string(res.Output) != "1\n"+sockName+"\n" {
		t.Errorf("mounts in the box: %q, %v", res.Output, err)
	}
}

func TestRelaxedBox(t *testing.T) {
	b := testBackend(t, fmt.Sprintf("test-relax-%d", os.Getpid()))
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		sec       sandbox.Security
		want      []string
		noNewPriv string
	}{
		{"cap_add", sandbox.Security{CapAdd: []string{"SYS_PTRACE"}}, []string{"SYS_PTRACE", "KILL"}, "1"},
		{"unhardened", sandbox.Security{Unhardened: true}, []string{"NET_RAW", "MKNOD", "KILL"}, "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			box, err := b.Open(ctx, sandbox.Spec{Image: testutil.TestImage(), Security: tc.sec})
			if err != nil {
				t.Fatal(err)
			}
			defer box.Close(ctx)
			st := boxStatus(t, box)
			if eff := hexMask(t, st["CapEff"]); eff&capMask(tc.want...) != capMask(tc.want...) {
				t.Errorf("CapEff %#x lacks some of %v", eff, tc.want)
			}
			if st["NoNewPrivs"] != tc.noNewPriv {
				t.Errorf("NoNewPrivs = %q, want %s", st["NoNewPrivs"], tc.noNewPriv)
			}
		})
	}
}

// A box whose user is a name (not known on the host) gets no socket
// directory and works over the attach stream; a numeric one gets its own.
func TestSocketDirOfUser(t *testing.T) {
	b := testBackend(t, fmt.Sprintf("test-sockuser-%d", os.Getpid()))
	ctx := context.Background()
	for _, tc := range []struct {
		user   string
		socket bool
		uid    int
	}{
		{"nobody", false, 0},
		{"65534:65534", true, 65534},
	} {
		t.Run(tc.user, func(t *testing.T) {
			sb, err := b.Open(ctx, sandbox.Spec{Image: testutil.TestImage(), User: tc.user, Workdir: "/tmp"})
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close(ctx)
			box := sb.(*Box)
			if (box.sock != nil) != tc.socket || (box.sockDir != "") != tc.socket {
				t.Fatalf("socket %v, dir %q; want socket %v", box.sock != nil, box.sockDir, tc.socket)
			}
			if tc.socket {
				fi, err := os.Stat(box.sockDir)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != 0o700 || fi.Sys().(*syscall.Stat_t).Uid != uint32(tc.uid) {
					t.Errorf("socket directory: mode %v uid %d; want 0700 owned by %d", fi.Mode().Perm(), fi.Sys().(*syscall.Stat_t).Uid, tc.uid)
				}
			}
			res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash("id -u")})
			if err != nil || string(res.Output) != "65534\n" {
				t.Errorf("id -u: %q, %v", res.Output, err)
			}
			// No capability at all, in any set (Podman would give a
			// non-root user the added ones as ambient capabilities).
			st := boxStatus(t, box)
			for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
				if m := hexMask(t, st[k]); m != 0 {
					t.Errorf("%s = %#x for a non-root user, want none", k, m)
				}
			}
		})
	}
}

// A CPU limit above what the engine has is cut to it, not refused.
func TestCPULimitClamped(t *testing.T) {
	b := testBackend(t, fmt.Sprintf("test-cpus-%d", os.Getpid()))
	ctx := context.Background()
	info, err := b.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	box, err := b.Open(ctx, sandbox.Spec{Image: testutil.TestImage(), Limits: sandbox.Limits{CPUs: float64(info.Info.NCPU) + 3}})
	if err != nil {
		t.Fatalf("a CPU limit above the engine's %d CPUs: %v", info.Info.NCPU, err)
	}
	defer box.Close(ctx)
	insp, err := b.cli.ContainerInspect(ctx, box.ID(), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := insp.Container.HostConfig.NanoCPUs; got != int64(info.Info.NCPU)*1e9 {
		t.Errorf("NanoCPUs = %d, want the engine's %d CPUs", got, info.Info.NCPU)
	}
}
