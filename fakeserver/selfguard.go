package fakeserver

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/hooks"
	"github.com/confpay/confpay-go/webhookverify"
)

// Keeping webhook deliveries away from the server itself and from
// addresses no receiver lives at.
//
// A delivery is a POST the server makes to a URL a caller chose. Were it
// to reach the server's own listener, a caller holding a test key could
// drive the admin interface (POST /_fake/reset wipes everything) or the
// /v1 interface. The address checks are the first wall:
//
//   - At subscription time (checkWebhookURL, Server.checkNotSelf): the URL
//     must be https (or http on a loopback host), on a port in 1–65535, on a
//     host written plainly (no decimal, octal, hex or short IPv4 forms,
//     which resolvers read differently); its host must not be an
//     unspecified, link-local or cloud-metadata address (nor an IPv6 one
//     that reaches such an IPv4 address: NAT64, 6to4), nor, written as an
//     address or resolved from a name, one of the server's own listeners;
//     nor may it name the host the subscribing request itself was sent to.
//   - At dial time (Server.guardDial, a net.Dialer ControlContext hook): the
//     address actually dialled, after every resolution, is checked by the
//     same rules, since a name can resolve differently later. A refused
//     dial fails the attempt (response_status 0).
//
// Addresses alone cannot see a delivery that a local forwarder, a proxy or
// a tunnel carries to the server, nor one sent by another fakeserver on
// the same host. So the second wall is on the receiving side
// (refuseDelivery): /_fake refuses every request that carries a delivery's
// signature header or the delivery client's User-Agent, 403 forbidden,
// nothing done, whoever sent it and whatever path led there.
//
// The server's own listeners are the address of Start's listener and every
// local address a request has reached the server on (so Handler mounted in
// someone else's server learns its address from the first request, which
// always comes before any subscription). At a port the server listens on,
// every loopback and unspecified address counts as the server too: a
// listener bound to 0.0.0.0 answers on all of them.

// codeForbidden is the code of the admin interface's refusal of a webhook
// delivery (403).
const codeForbidden confpay.ErrorCode = "forbidden"

// refuseDelivery answers 403 forbidden to a request that carries the marks
// of a webhook delivery: an X-Service-Signature header (whatever its value,
// empty too), or a User-Agent holding the delivery client's
// (hooks.UserAgent, in any case). admit calls it for every /_fake request,
// before any route runs.
func refuseDelivery(r *http.Request) *apiError {
	marked := len(r.Header.Values(webhookverify.SignatureHeader)) > 0
	for _, ua := range r.Header.Values("User-Agent") {
		marked = marked || strings.Contains(strings.ToLower(ua), hooks.UserAgent)
	}
	if marked {
		return newError(http.StatusForbidden, codeForbidden, "the admin interface takes no webhook delivery (a request with "+webhookverify.SignatureHeader+" or the delivery client's User-Agent)")
	}
	return nil
}

// crossOrigin is net/http's own protection against cross-site request
// forgery: it refuses a non-safe request (not GET, HEAD or OPTIONS) that a
// browser marks as sent from another origin (Sec-Fetch-Site, or an Origin
// whose host is not the request's). Requests without those headers (curl,
// SDKs, test code) pass.
var crossOrigin = http.NewCrossOriginProtection()

// refuseCrossOrigin answers 403 forbidden to a state-changing /_fake
// request sent by a web page of another origin. Without it, on a server
// with no admin token, any page open in a browser on the machine could
// empty the sandbox with a bodiless cross-site form POST to /_fake/reset.
// The dashboard's own forms are same-origin, and carry a CSRF token too.
func refuseCrossOrigin(r *http.Request) *apiError {
	if crossOrigin.Check(r) != nil {
		return newError(http.StatusForbidden, codeForbidden, "the admin interface takes no state-changing request from a web page of another origin")
	}
	return nil
}

// maxSelfEntries bounds the remembered ports and addresses (a host has few;
// the bound only keeps a strange network from growing the sets).
const maxSelfEntries = 64

// lookupTimeout bounds the name resolution made when a subscription is
// created.
const lookupTimeout = 2 * time.Second

// selfAddrs is what the server knows of its own listeners.
type selfAddrs struct {
	mu    sync.RWMutex
	ports map[uint16]struct{}
	addrs map[netip.Addr]struct{}
}

// learn records ap as an address the server listens on.
func (sa *selfAddrs) learn(ap netip.AddrPort) {
	if !ap.IsValid() {
		return
	}
	a := plainAddr(ap.Addr())
	sa.mu.RLock()
	_, knownPort := sa.ports[ap.Port()]
	_, knownAddr := sa.addrs[a]
	sa.mu.RUnlock()
	if knownPort && knownAddr {
		return
	}
	sa.mu.Lock()
	defer sa.mu.Unlock()
	if sa.ports == nil {
		sa.ports = map[uint16]struct{}{}
		sa.addrs = map[netip.Addr]struct{}{}
	}
	if len(sa.ports) < maxSelfEntries {
		sa.ports[ap.Port()] = struct{}{}
	}
	if len(sa.addrs) < maxSelfEntries {
		sa.addrs[a] = struct{}{}
	}
}

// learnNetAddr records a listener or connection address (a *net.TCPAddr;
// anything else is ignored).
func (sa *selfAddrs) learnNetAddr(a any) {
	if t, ok := a.(*net.TCPAddr); ok {
		sa.learn(t.AddrPort())
	}
}

// has reports whether ap reaches one of the server's own listeners.
func (sa *selfAddrs) has(ap netip.AddrPort) bool {
	a := plainAddr(ap.Addr())
	sa.mu.RLock()
	defer sa.mu.RUnlock()
	if _, ok := sa.ports[ap.Port()]; !ok {
		return false
	}
	if a.IsLoopback() || a.IsUnspecified() {
		return true
	}
	_, ok := sa.addrs[a]
	return ok
}

// plainAddr is a without an IPv4-in-IPv6 mapping or a zone.
func plainAddr(a netip.Addr) netip.Addr { return a.Unmap().WithZone("") }

// Cloud metadata services outside the link-local ranges: EC2's over IPv6
// (its IPv4 one, 169.254.169.254, is link-local) and Alibaba Cloud's.
var (
	awsMetadataV6     = netip.MustParseAddr("fd00:ec2::254")
	alibabaMetadataV4 = netip.MustParseAddr("100.100.100.200")
)

// IPv6 prefixes that carry an IPv4 address in their low bits, and reach
// it through a translator or a tunnel: NAT64's well-known and local-use
// prefixes (RFC 6052, RFC 8215) and the deprecated IPv4-compatible one.
// 6to4 (2002::/16) carries it in bits 16 to 47 instead.
var (
	nat64WellKnown = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local     = netip.MustParsePrefix("64:ff9b:1::/48")
	v4Compatible   = netip.MustParsePrefix("::/96")
	sixToFour      = netip.MustParsePrefix("2002::/16")
)

// embeddedV4 returns the IPv4 address an IPv6 address of a translating or
// tunnelling prefix reaches.
func embeddedV4(a netip.Addr) (netip.Addr, bool) {
	b := a.As16()
	switch {
	case nat64WellKnown.Contains(a) || nat64Local.Contains(a) || (v4Compatible.Contains(a) && !a.IsUnspecified() && !a.IsLoopback()):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// forbiddenAddr says why no delivery may go to a, or "" when one may. An
// IPv6 address that reaches an IPv4 one (NAT64, 6to4, IPv4-compatible)
// is judged by that one.
func forbiddenAddr(a netip.Addr) string {
	a = plainAddr(a)
	if a.Is6() {
		if v4, ok := embeddedV4(a); ok {
			if why := forbiddenAddr(v4); why != "" {
				return why + ", through " + a.String()
			}
		}
	}
	switch {
	case a.IsUnspecified() || (a.Is4() && a.As4()[0] == 0):
		return "an unspecified address (0.0.0.0/8, ::)"
	case a.IsLinkLocalUnicast():
		return "a link-local address (169.254.0.0/16, fe80::/10, where cloud metadata services answer)"
	case a == awsMetadataV6 || a == alibabaMetadataV4:
		return "a cloud metadata address"
	}
	return ""
}

// numericHost reports whether host, not a standard IP address, ends in a
// label a resolver may read as a number: decimal (2130706433), octal
// (0177.0.0.1), hex (0x7f.1), short (127.1) or dotted with a trailing dot
// (127.0.0.1.). No top-level domain is numeric, so no real name is lost.
func numericHost(host string) bool {
	host = strings.TrimSuffix(host, ".")
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	digits := last
	if len(last) >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X') {
		digits = last[2:]
		return strings.Trim(strings.ToLower(digits), "0123456789abcdef") == ""
	}
	return strings.Trim(digits, "0123456789") == ""
}

// loopbackName reports whether a host name always resolves to loopback:
// localhost and its subdomains (RFC 6761), with or without a final dot.
func loopbackName(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}

// urlPort is the port a URL dials: its own, or its scheme's default.
func urlPort(u *url.URL) uint16 {
	if p := u.Port(); p != "" {
		n, _ := strconv.ParseUint(p, 10, 16) // checkWebhookURL checked it
		return uint16(n)
	}
	if u.Scheme == "http" {
		return 80
	}
	return 443
}

// errSelfURL is the refusal of a URL that reaches the server itself.
func errSelfURL() *apiError {
	return errInvalid("url", "url points at this server itself: deliveries may not reach its own listener")
}

// checkNotSelf refuses a subscription URL (already accepted by
// checkWebhookURL) that would reach the server itself, or whose name
// resolves to a forbidden address. r is the subscribing request: a URL for
// the very host and port it was sent to is the server (perhaps through a
// proxy). A name that does not resolve now is accepted: the dial-time
// check stands behind it.
func (s *Server) checkNotSelf(ctx context.Context, u *url.URL, r *http.Request) *apiError {
	port := urlPort(u)
	host := u.Hostname()
	if sameAuthority(host, port, r) {
		return errSelfURL()
	}
	var addrs []netip.Addr
	switch a, err := netip.ParseAddr(host); {
	case err == nil:
		addrs = []netip.Addr{a}
	case loopbackName(host):
		addrs = []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}
	default:
		ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
		defer cancel()
		addrs, _ = s.lookup(ctx, host)
	}
	for _, a := range addrs {
		if why := forbiddenAddr(a); why != "" {
			return errInvalid("url", "url host resolves to "+why)
		}
		if s.self.has(netip.AddrPortFrom(a, port)) {
			return errSelfURL()
		}
	}
	return nil
}

// sameAuthority reports whether host and port name the host the request r
// was sent to (its Host header; its port defaults by r's scheme).
func sameAuthority(host string, port uint16, r *http.Request) bool {
	rh, rp, err := net.SplitHostPort(r.Host)
	if err != nil {
		rh = strings.Trim(r.Host, "[]")
		rp = "80"
		if r.TLS != nil {
			rp = "443"
		}
	}
	n, err := strconv.ParseUint(rp, 10, 16)
	if err != nil || uint16(n) != port {
		return false
	}
	norm := func(h string) string { return strings.ToLower(strings.TrimSuffix(h, ".")) }
	if norm(rh) == norm(host) {
		return true
	}
	a, err1 := netip.ParseAddr(rh)
	b, err2 := netip.ParseAddr(host)
	return err1 == nil && err2 == nil && plainAddr(a) == plainAddr(b)
}

// lookup resolves a host name, through the test hook when one is set.
func (s *Server) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if s.opts.lookup != nil {
		return s.opts.lookup(ctx, host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// errDialRefused fails a delivery attempt whose dial the guard refused.
var errDialRefused = errors.New("webhook delivery refused: the address is this server or not a receiver's")

// guardDial is the delivery dialer's ControlContext hook: it refuses a
// connection to the server's own listeners or to a forbidden address,
// looking at the address actually dialled.
func (s *Server) guardDial(_ context.Context, _, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || forbiddenAddr(ap.Addr()) != "" || s.self.has(ap) {
		return errDialRefused
	}
	return nil
}

// dialer returns the delivery transport's dial function: the guarded
// dialer, behind the test resolution hook when one is set.
func (s *Server) dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, ControlContext: s.guardDial}
	if s.opts.lookup == nil {
		return d.DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if _, err := netip.ParseAddr(host); err == nil {
			return d.DialContext(ctx, network, addr)
		}
		addrs, err := s.opts.lookup(ctx, host)
		if err != nil {
			return nil, err
		}
		if len(addrs) == 0 {
			return nil, errors.New("no address")
		}
		return d.DialContext(ctx, network, net.JoinHostPort(addrs[0].String(), port))
	}
}
