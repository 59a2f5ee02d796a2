package shim

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"
)

func TestDialAll(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{}, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	// A port that was listening and is no longer: refused.
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	goneAddr := gone.Addr().String()
	gone.Close()
	ln2 := ln.Addr().String()

	var out bytes.Buffer
	if err := DialAll(context.Background(), &out, []string{ln2, goneAddr, "not-an-address"}, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	got := ParseDial(out.String())
	want := map[string]Reach{ln2: Connected, goneAddr: Refused, "not-an-address": Failed}
	for a, r := range want {
		if got[a] != r {
			t.Errorf("%s: %s, want %s (output %q)", a, got[a], r, out.String())
		}
	}
	select {
	case <-accepted:
	case <-time.After(5 * time.Second):
		t.Error("the listener saw no connection")
	}
	ln.Close()
}
