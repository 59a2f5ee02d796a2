package k8s

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// TestProbeHonoursSettings: the probe asks the cluster --k8s_kubeconfig
// and --k8s_context name, given in the options as the command line gives
// them, not the one of the environment.
func TestProbeHonoursSettings(t *testing.T) {
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"major":"1","minor":"30","gitVersion":"v1.30.0"}`))
	}))
	defer srv.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close() // nothing answers there any more

	// The current context points at the dead server; "up" at the live one.
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters:
- name: live
  cluster: {server: "` + srv.URL + `"}
- name: dead
  cluster: {server: "` + downURL + `"}
users:
- name: u
  user: {token: t}
contexts:
- name: up
  context: {cluster: live, user: u}
- name: gone
  context: {cluster: dead, user: u}
current-context: gone
`
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// The environment names no cluster at all.
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "absent"))
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "") // not in a pod either

	params := func(kv ...string) sandbox.Options {
		p := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			p[kv[i]] = kv[i+1]
		}
		return sandbox.Options{Params: p}
	}
	tests := []struct {
		name   string
		opts   sandbox.Options
		errHas string // "" for success
	}{
		{"kubeconfig and context", params(ParamKubeconfig, kc, ParamContext, "up"), ""},
		{"kubeconfig's current context", params(ParamKubeconfig, kc), "API server"},
		{"unknown context", params(ParamKubeconfig, kc, ParamContext, "nowhere"), "no cluster configured"},
		{"no settings", sandbox.Options{}, "no cluster configured"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			before := asked.Load()
			err := Probe(ctx, tt.opts)
			if tt.errHas == "" {
				if err != nil || asked.Load() != before+1 {
					t.Errorf("Probe = %v after %d requests; want nil after asking the live server once", err, asked.Load()-before)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("Probe = %v; want an error with %q", err, tt.errHas)
			}
			if asked.Load() != before {
				t.Errorf("the live server was asked; want it left alone")
			}
		})
	}
}
