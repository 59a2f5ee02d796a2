package shim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DialSubcommand is the hidden swerve subcommand a backend runs inside a
// box to learn whether the box can open TCP connections: the one probe of
// network isolation that needs nothing from the image.
const DialSubcommand = "shim-dial"

// Reach is what one dial found.
type Reach string

// Dial outcomes. Only Connected proves a path: a refusal or a reset may
// come from a filter as well as from the peer.
const (
	Connected   Reach = "connected"
	Refused     Reach = "refused"
	Unreachable Reach = "unreachable"
	TimedOut    Reach = "timeout"
	Failed      Reach = "failed"
)

// DialAll tries a TCP connection to every address at once, each for at
// most timeout, closes what connected, and writes one line per address
// to w, in the order given: "ADDRESS OUTCOME[ DETAIL]".
func DialAll(ctx context.Context, w io.Writer, addrs []string, timeout time.Duration) error {
	out := make([]string, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, detail := dialOne(ctx, a, timeout)
			out[i] = strings.TrimSpace(fmt.Sprintf("%s %s %s", a, r, detail))
		}()
	}
	wg.Wait()
	for _, l := range out {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}

func dialOne(ctx context.Context, addr string, timeout time.Duration) (Reach, string) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		c.Close()
		return Connected, ""
	}
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET):
		return Refused, ""
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		return Unreachable, oneLine(err)
	case errors.As(err, &ne) && ne.Timeout():
		return TimedOut, ""
	}
	return Failed, oneLine(err)
}

func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

// ParseDial reads DialAll's lines back: address → outcome.
func ParseDial(out string) map[string]Reach {
	m := map[string]Reach{}
	for l := range strings.Lines(out) {
		f := strings.Fields(l)
		if len(f) >= 2 {
			m[f[0]] = Reach(f[1])
		}
	}
	return m
}
