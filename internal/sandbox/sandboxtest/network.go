package sandboxtest

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// Network: a box opened with sandbox.NetworkNone reaches nothing outside
// itself. Agent boxes are opened that way, and grading boxes are opened
// while other rollouts' agent boxes run: a policy that could reach the
// host, or another box, could talk to whatever listens there.

func (s *suite) networkTests() []subtest {
	return []subtest{
		{"NoneIsolated", s.testNetworkNoneIsolated},
	}
}

// dialScript is run in the box by python3 (which every test image has):
// argv[1] is a port, the rest are IPv4 addresses. It first connects to a
// listener of its own on the box's loopback, the control that shows its
// dialling works, then dials every address at port at once, each with a
// two-second limit, and prints one line per address.
const dialScript = `import socket, sys, threading
port, addrs = int(sys.argv[1]), sys.argv[2:]
own = socket.socket()
own.bind(("127.0.0.1", 0))
own.listen(1)
try:
    socket.create_connection(own.getsockname(), timeout=2).close()
    print("loopback: connected")
except OSError as e:
    print("loopback: failed: %s" % e)
got = {}
def dial(a):
    try:
        socket.create_connection((a, port), timeout=2).close()
        got[a] = "connected"
    except OSError as e:
        got[a] = "failed: %s" % (e or type(e).__name__)
ts = [threading.Thread(target=dial, args=(a,)) for a in addrs]
for t in ts:
    t.start()
for t in ts:
    t.join()
for a in addrs:
    print("%s: %s" % (a, got[a]))
`

// countingListener accepts connections and remembers where they came from.
type countingListener struct {
	ln   *net.TCPListener
	done chan struct{}
	mu   sync.Mutex
	from []string
}

func listenAll(t testing.TB) *countingListener {
	t.Helper()
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatalf("listen on all IPv4 interfaces: %v", err)
	}
	l := &countingListener{ln: ln.(*net.TCPListener), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for {
			c, err := l.ln.Accept()
			if err != nil {
				return
			}
			l.mu.Lock()
			l.from = append(l.from, c.RemoteAddr().String())
			l.mu.Unlock()
			c.Close()
		}
	}()
	t.Cleanup(func() { l.ln.Close(); <-l.done })
	return l
}

// drain accepts what is still queued for a moment, then stops and returns
// every peer that connected.
func (l *countingListener) drain() []string {
	_ = l.ln.SetDeadline(time.Now().Add(300 * time.Millisecond))
	<-l.done
	l.ln.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.from)
}

func (l *countingListener) port() int { return l.ln.Addr().(*net.TCPAddr).Port }

// hostIPv4 lists this machine's IPv4 addresses other than the loopback.
func hostIPv4() ([]string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if ip4 := ipn.IP.To4(); ip4 != nil && !ip4.IsLoopback() && !ip4.IsUnspecified() {
			out = append(out, ip4.String())
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// testNetworkNoneIsolated listens on every IPv4 interface of the machine
// running the test and dials each of its addresses from a NetworkNone box.
// The verdict is the listener's: no connection may arrive, whatever the
// box's side says.
func (s *suite) testNetworkNoneIsolated(t *testing.T) {
	if why := s.h.NetworkNotIsolated; why != "" {
		t.Skip("the backend declares that NetworkNone boxes are not cut off from the network: " + why)
	}
	l := listenAll(t)
	box := s.open(t, func(sp *sandbox.Spec) { sp.Network = sandbox.NetworkNone })
	// Listed after Open: a backend may create the network its boxes sit
	// on (and the address it gives this machine there) when it opens one.
	addrs, err := hostIPv4()
	if err != nil {
		t.Fatalf("list this machine's addresses: %v", err)
	}
	if len(addrs) == 0 {
		t.Skip("this machine has no IPv4 address but the loopback: nothing to dial")
	}
	cmd := append([]string{"python3", "-c", dialScript, strconv.Itoa(l.port())}, addrs...)
	req := sandbox.ExecRequest{Cmd: cmd, Timeout: 30 * time.Second}
	res := run(t, box, req)
	peers := l.drain()
	out := string(res.Output)
	if len(peers) > 0 {
		t.Errorf("a box opened with NetworkNone connected %d time(s) to a listener on this machine (port %d; connections from %s); want none.\nwhat the box saw:\n%s",
			len(peers), l.port(), strings.Join(peers, ", "), out)
	}
	if res.ExitCode != 0 || res.TimedOut {
		t.Fatalf("Exec(%s): got %s, want exit 0", showCmd(req.Cmd), showRes(res))
	}
	// The control: a probe that cannot reach its own loopback proves
	// nothing by failing to reach the host.
	if !strings.Contains(out, "loopback: connected\n") {
		t.Fatalf("the probe in the box could not connect to a listener on the box's own loopback, so its failures to reach this machine prove nothing; it printed:\n%s", out)
	}
	if n := strings.Count(out, "\n"); n != len(addrs)+1 {
		t.Fatalf("the probe printed %d lines, want %d (the loopback and one per address %v):\n%s", n, len(addrs)+1, addrs, out)
	}
	if len(peers) == 0 {
		t.Logf("dialled %s port %d from the box: nothing arrived\n%s", strings.Join(addrs, ", "), l.port(), out)
	}
}
