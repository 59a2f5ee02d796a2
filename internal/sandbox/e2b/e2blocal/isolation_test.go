package e2blocal_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"mime/multipart"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/e2b"
	"github.com/swerve-dev/swerve/internal/sandbox/e2b/e2blocal"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// httpScript runs in a sandbox under python3: argv[1] is host:port,
// argv[2] a JSON list of requests ({name, method, path, headers, body in
// base64}), each sent on a connection of its own and read to its end (a
// process stream ends with its process); it prints one JSON line per
// request with the status envd answered and the start of its body (0 and
// the error when there was no answer).
const httpScript = `import base64, http.client, json, sys
target, reqs = sys.argv[1], json.loads(sys.argv[2])
for r in reqs:
    out = {"name": r["name"]}
    try:
        c = http.client.HTTPConnection(target, timeout=5)
        c.request(r["method"], r["path"], body=base64.b64decode(r["body"] or ""), headers=r["headers"])
        resp = c.getresponse()
        out["status"], out["body"] = resp.status, resp.read().decode("utf-8", "replace")[:300]
        c.close()
    except OSError as e:
        out["status"], out["body"] = 0, str(e)
    print(json.dumps(out))
`

// envdRequest is one request httpScript sends.
type envdRequest struct {
	Name    string            `json:"name"`
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
	Body    []byte            `json:"body"`
	want    int
}

type envdAnswer struct {
	Name   string `json:"name"`
	Status int    `json:"status"`
	Body   string `json:"body"`
}

// uploadRequest is POST /files writing content to path, as the SDKs send
// it (multipart, one "file" part).
func uploadRequest(name, path, content string, query url.Values, headers map[string]string) envdRequest {
	var b strings.Builder
	mw := multipart.NewWriter(&b)
	part, _ := mw.CreateFormFile("file", path)
	_, _ = part.Write([]byte(content))
	_ = mw.Close()
	q := url.Values{"path": {path}, "username": {"root"}}
	for k, v := range query {
		q[k] = v
	}
	h := map[string]string{"Content-Type": mw.FormDataContentType()}
	for k, v := range headers {
		h[k] = v
	}
	return envdRequest{Name: name, Method: "POST", Path: "/files?" + q.Encode(), Headers: h, Body: []byte(b.String())}
}

// startRequest is process.Process/Start (a Connect server stream: one
// enveloped JSON message) running a bash line.
func startRequest(name, line string, headers map[string]string) envdRequest {
	msg, _ := json.Marshal(map[string]any{"process": map[string]any{"cmd": "/bin/bash", "args": []string{"-c", line}}})
	env := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(env[1:], uint32(len(msg)))
	env = append(env, msg...)
	h := map[string]string{"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1"}
	for k, v := range headers {
		h[k] = v
	}
	return envdRequest{Name: name, Method: "POST", Path: "/process.Process/Start", Headers: h, Body: env}
}

// internalAddr is the address of a sandbox's container on the plane's
// internal network, as the Docker side sees it.
func internalAddr(t *testing.T, cli *client.Client, sandboxID string) string {
	t.Helper()
	insp, err := cli.ContainerInspect(context.Background(), "e2blocal-"+sandboxID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatalf("inspect the container of sandbox %s: %v", sandboxID, err)
	}
	if insp.Container.NetworkSettings == nil {
		t.Fatalf("container of sandbox %s has no network settings", sandboxID)
	}
	n := insp.Container.NetworkSettings.Networks[e2blocal.InternalNetwork]
	if n == nil || !n.IPAddress.IsValid() {
		t.Fatalf("container of sandbox %s is not on %s (networks %v): an internet-less sandbox must be", sandboxID, e2blocal.InternalNetwork, insp.Container.NetworkSettings.Networks)
	}
	return net.JoinHostPort(n.IPAddress.String(), fmt.Sprint(e2b.EnvdPort))
}

// TestSandboxCannotDriveAnother: internet-less sandboxes share the plane's
// internal network, so sandbox A can open a connection to sandbox B's envd.
// Without B's access token, every way envd offers to run a command, write
// or read a file, or reset the token must be refused (401), and B must be
// unchanged. A knows its own token here, as a box that found it would:
// tokens are per sandbox, so it must not open B either. The last request,
// with B's token, is the control: the same upload then works, so the
// refusals are the token's doing and not a malformed request's.
func TestSandboxCannotDriveAnother(t *testing.T) {
	srv := startPlane(t, nil)
	b := backendFor(t, srv, e2b.Templates{Rule: "{image}"}, fmt.Sprintf("e2b-isolation-%d", os.Getpid()))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	open := func(name string) *e2b.Box {
		box, err := b.Open(ctx, sandbox.Spec{Image: testutil.TestImage(), Network: sandbox.NetworkNone})
		if err != nil {
			t.Fatalf("open sandbox %s: %v", name, err)
		}
		t.Cleanup(func() { _ = box.Close(context.Background()) })
		return box.(*e2b.Box)
	}
	a, victim := open("A"), open("B")
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	internalAddr(t, cli, a.ID()) // A is on the internal network too
	target := internalAddr(t, cli, victim.ID())
	ownToken, victimToken := a.Envd().Token, victim.Envd().Token
	if ownToken == "" || victimToken == "" || ownToken == victimToken {
		t.Fatalf("access tokens: A %q, B %q; want two different non-empty tokens", ownToken, victimToken)
	}
	const forged = "forged-token-of-the-attacker"
	own := map[string]string{"X-Access-Token": ownToken}
	later := url.Values{"signature_expiration": {fmt.Sprint(time.Now().Add(time.Hour).Unix())}}
	later.Set("signature", "v1_0000000000000000000000000000000000000000000000000000000000000000")
	initBody, _ := json.Marshal(map[string]any{"accessToken": forged, "envVars": map[string]string{"FROM_A": "1"}})
	reqs := []envdRequest{
		{Name: "health", Method: "GET", Path: "/health", want: 204}, // reachability: the refusals below are envd's
		withWant(uploadRequest("upload without a token", "/tmp/from-a-upload", "pwned\n", nil, nil), 401),
		withWant(uploadRequest("upload with A's own token", "/tmp/from-a-own", "pwned\n", nil, own), 401),
		withWant(uploadRequest("upload with a forged signature", "/tmp/from-a-signed", "pwned\n", later, nil), 401),
		{Name: "download without a token", Method: "GET", Path: "/files?path=%2Fetc%2Fhostname&username=root", want: 401},
		withWant(startRequest("start a process without a token", "echo pwned > /tmp/from-a-start", nil), 401),
		withWant(startRequest("start a process with A's own token", "echo pwned > /tmp/from-a-start-own", own), 401),
		{Name: "list processes without a token", Method: "POST", Path: "/process.Process/List", Body: []byte("{}"),
			Headers: map[string]string{"Content-Type": "application/json", "Connect-Protocol-Version": "1"}, want: 401},
		{Name: "reset the token through /init", Method: "POST", Path: "/init", Body: initBody,
			Headers: map[string]string{"Content-Type": "application/json"}, want: 401},
		{Name: "reset the token through /init with A's own token", Method: "POST", Path: "/init", Body: initBody,
			Headers: map[string]string{"Content-Type": "application/json", "X-Access-Token": ownToken}, want: 401},
		withWant(uploadRequest("upload with the token /init tried to set", "/tmp/from-a-forged", "pwned\n", nil, map[string]string{"X-Access-Token": forged}), 401),
	}
	answers := runRequests(t, a, target, reqs)
	for i, r := range reqs {
		got := answers[i]
		t.Logf("%s: HTTP %d %.80q", r.Name, got.Status, got.Body)
		if got.Status != r.want {
			t.Errorf("from sandbox A, %s (%s %s) at B's envd %s: got HTTP %d %q, want %d", r.Name, r.Method, r.Path, target, got.Status, got.Body, r.want)
		}
	}

	// B is unchanged: nothing A tried to write exists, and B's own token
	// (which the backend sends) still works.
	res, err := victim.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash("sleep 0.5; ls /tmp/from-a-* 2>/dev/null; echo B-alive")})
	if err != nil {
		t.Fatalf("B after A's attempts: %v (its token no longer works?)", err)
	}
	if got := string(res.Output); got != "B-alive\n" {
		t.Errorf("B after A's attempts: files from A or no answer: %q, want %q", got, "B-alive\n")
	}
	if _, err := victim.ReadFile(ctx, "/tmp/from-a-upload"); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("ReadFile(/tmp/from-a-upload) in B: error %v, want ErrNotFound", err)
	}

	// The control: the same upload and start with B's token go through.
	withToken := map[string]string{"X-Access-Token": victimToken}
	ctl := runRequests(t, a, target, []envdRequest{
		uploadRequest("upload with B's token", "/tmp/from-a-control", "with the token\n", nil, withToken),
		startRequest("start a process with B's token", "echo started > /tmp/from-a-control-start", withToken),
	})
	for _, c := range ctl {
		if c.Status != 200 {
			t.Errorf("control: %s from A got HTTP %d %q, want 200: the requests above may be malformed, and their 401s prove nothing", c.Name, c.Status, c.Body)
		}
	}
	for path, want := range map[string]string{"/tmp/from-a-control": "with the token\n", "/tmp/from-a-control-start": "started\n"} {
		if data, err := victim.ReadFile(ctx, path); err != nil || string(data) != want {
			t.Errorf("control: B's %s holds %q (error %v), want %q", path, data, err, want)
		}
	}
}

func withWant(r envdRequest, want int) envdRequest {
	r.want = want
	return r
}

// runRequests sends reqs from inside box to target and returns envd's
// answers, in order.
func runRequests(t *testing.T, box sandbox.Sandbox, target string, reqs []envdRequest) []envdAnswer {
	t.Helper()
	for i := range reqs {
		if reqs[i].Headers == nil {
			reqs[i].Headers = map[string]string{}
		}
	}
	js, err := json.Marshal(reqs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := sandbox.ExecRequest{Cmd: []string{"python3", "-c", httpScript, target, string(js)}, Timeout: 30 * time.Second}
	res, err := box.Exec(ctx, req)
	if err != nil {
		t.Fatalf("run the requests in sandbox %s: %v", box.ID(), err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("the requests in sandbox %s: exit %d, output:\n%s", box.ID(), res.ExitCode, res.Output)
	}
	var out []envdAnswer
	for l := range strings.Lines(string(res.Output)) {
		var a envdAnswer
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			t.Fatalf("the requests in sandbox %s printed %q: %v", box.ID(), l, err)
		}
		out = append(out, a)
	}
	if len(out) != len(reqs) {
		t.Fatalf("the requests in sandbox %s: %d answers for %d requests:\n%s", box.ID(), len(out), len(reqs), res.Output)
	}
	return out
}
