// Command e2blocal runs a local E2B control plane (package e2blocal) on the
// loopback until interrupted, and prints the environment that points E2B
// clients at it: swerve's e2b backend and the official SDKs alike.
//
//	go run ./internal/sandbox/e2b/e2blocal/cmd/e2blocal \
//	    -envd ~/.cache/swerve-ci/envd-0.6.13-54693ff353d2/envd \
//	    -template swe-django-11099=swebench/sweb.eval.x86_64.django_1776_django-11099:latest
//
// Without -template, any local image name is accepted as a template id.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/swerve-dev/swerve/internal/sandbox/e2b/e2blocal"
)

func main() {
	envd := flag.String("envd", os.Getenv("SWERVE_ENVD_BINARY"), "envd binary (scripts/cluster/build-envd.sh prints one); env SWERVE_ENVD_BINARY")
	listen := flag.String("listen", "127.0.0.1:0", "loopback address to serve on")
	key := flag.String("api-key", os.Getenv("E2B_API_KEY"), "API key clients must send (default: E2B_API_KEY, else a random one)")
	var templates []string
	flag.Func("template", "ID=IMAGE: template id served from a local image (repeatable)", func(s string) error {
		if !strings.Contains(s, "=") {
			return fmt.Errorf("want ID=IMAGE, got %q", s)
		}
		templates = append(templates, s)
		return nil
	})
	flag.Parse()
	if *key == "" {
		b := make([]byte, 20)
		_, _ = rand.Read(b)
		*key = "e2b_" + hex.EncodeToString(b)
	}
	cfg := e2blocal.Config{Envd: *envd, APIKey: *key, AnyImage: len(templates) == 0, Templates: map[string]string{}}
	for _, t := range templates {
		id, image, _ := strings.Cut(t, "=")
		cfg.Templates[id] = image
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := e2blocal.Serve(ctx, cfg, *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2blocal:", err)
		os.Exit(1)
	}
	fmt.Printf("export E2B_API_KEY=%s E2B_API_URL=%s E2B_SANDBOX_URL=%s E2B_DOMAIN=e2b.local\n", *key, srv.URL, srv.URL)
	<-ctx.Done()
	srv.Close()
}
