package cli

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/testutil"
)

// swerve view serves on loopback, answers, and stops when its context ends.
func TestViewCommand(t *testing.T) {
	file := filepath.Join(testutil.RepoRoot(t), "internal", "view", "testdata", "oracle.jsonl")
	var stdout, stderr syncBuffer
	root := NewRoot(&stdout, &stderr)
	root.SetArgs([]string{"view", file, "--listen", "127.0.0.1:0"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	urlRe := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`)
	var url string
	for deadline := time.Now().Add(10 * time.Second); url == ""; {
		url = urlRe.FindString(stdout.String())
		if time.Now().After(deadline) {
			t.Fatalf("no URL printed; stdout %q stderr %q", stdout.String(), stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err := http.Get(url + "task?key=sample__calc-1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `class="step submit"`) {
		t.Fatalf("task page: %d %.300s", resp.StatusCode, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("view returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("view did not stop when its context ended")
	}
	if strings.Contains(stderr.String(), "warning") {
		t.Errorf("loopback warned: %s", stderr.String())
	}
}

func TestViewCommandErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"view", filepath.Join(dir, "missing")}, "no such file"},
		{[]string{"view", dir}, "holds no run"},
		{[]string{"view", "a", "b", "c"}, "accepts between 1 and 2 arg(s)"},
	} {
		_, _, err := execTasksCLI(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	c, _, err := NewRoot(io.Discard, io.Discard).Find([]string{"view"})
	if err != nil || c.Short == "" || c.Long == "" || c.Example == "" || c.Flags().Lookup("listen") == nil || c.Flags().Lookup("open") == nil {
		t.Errorf("view command incomplete: %v", err)
	}
}
