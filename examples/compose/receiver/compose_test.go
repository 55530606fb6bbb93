package main

import (
	"net"
	"os"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"
)

// TestComposeFileAgrees checks examples/compose/compose.yaml against what
// it names: the image scripts/build-image.sh builds by default, the
// binary's default port, a token the binary accepts off loopback, and a
// receiver reached on loopback in the server's network namespace, built
// from this package. (scripts/smoke-image.sh runs the same topology with
// podman in CI.)
func TestComposeFileAgrees(t *testing.T) {
	var compose struct {
		Services struct {
			Fakeserver struct {
				Image       string            `yaml:"image"`
				Environment map[string]string `yaml:"environment"`
				Ports       []string          `yaml:"ports"`
			} `yaml:"fakeserver"`
			Receiver struct {
				Build struct {
					Context    string `yaml:"context"`
					Dockerfile string `yaml:"dockerfile"`
				} `yaml:"build"`
				NetworkMode string            `yaml:"network_mode"`
				Environment map[string]string `yaml:"environment"`
			} `yaml:"receiver"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(read(t, "../compose.yaml"), &compose); err != nil {
		t.Fatal(err)
	}
	fs, rc := compose.Services.Fakeserver, compose.Services.Receiver

	if tag := regexp.MustCompile(`tag="\$\{1:-([^}]+)\}"`).FindSubmatch(read(t, "../../../scripts/build-image.sh")); tag == nil || string(tag[1]) != fs.Image {
		t.Errorf("the fakeserver's image is %q; scripts/build-image.sh builds %q by default", fs.Image, tag)
	}
	addr := regexp.MustCompile(`defaultAddr\s*=\s*"([^"]+)"`).FindSubmatch(read(t, "../../../cmd/confpay-fakeserver/manual.go"))
	if addr == nil {
		t.Fatal("cmd/confpay-fakeserver/manual.go has no defaultAddr")
	}
	_, port, _ := net.SplitHostPort(string(addr[1]))
	if len(fs.Ports) != 1 || fs.Ports[0] != "127.0.0.1:"+port+":"+port {
		t.Errorf("the fakeserver publishes %q; the binary listens on port %s (published on the host's loopback only)", fs.Ports, port)
	}
	if tok := fs.Environment["CONFPAY_FAKESERVER_ADMIN_TOKEN"]; !strings.HasPrefix(tok, "${CONFPAY_FAKESERVER_ADMIN_TOKEN:?") {
		t.Errorf("the admin token is %q: it must be required from the environment (the binary refuses to start off loopback without one)", tok)
	}

	if rc.NetworkMode != "service:fakeserver" {
		t.Errorf("the receiver's network_mode is %q: the server delivers plain http only to loopback, so it must share the server's namespace", rc.NetworkMode)
	}
	host, _, err := net.SplitHostPort(rc.Environment["ADDR"])
	if err != nil || !net.ParseIP(host).IsLoopback() {
		t.Errorf("the receiver listens on %q, not a loopback address", rc.Environment["ADDR"])
	}
	if rc.Build.Context != "../.." {
		t.Errorf("the receiver's build context is %q, want the repository root", rc.Build.Context)
	}
	if df := string(read(t, "../../../"+rc.Build.Dockerfile)); !strings.Contains(df, "go build -trimpath -o /receiver ./examples/compose/receiver") {
		t.Errorf("%s does not build this package", rc.Build.Dockerfile)
	}
	if _, ok := rc.Environment["CONFPAY_WEBHOOK_SECRET"]; !ok {
		t.Error("the receiver is not given CONFPAY_WEBHOOK_SECRET")
	}
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
