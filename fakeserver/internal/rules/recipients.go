package rules

import (
	"errors"
	"strings"

	"github.com/confpay/confpay-go/fakeserver/internal/names"
)

// MaxRecipients is the most entries allowed_recipients may hold.
const MaxRecipients = 100

var (
	errRecipientShape = errors.New("must be an @handle, an @owner/agent handle, a 0x address, a domain name or *.domain")
	errWildcard       = errors.New(`a wildcard must be "*." then a domain name with at least two labels, such as *.example.com`)
)

// Recipient is what a payment's recipient is called: every name of it a
// policy entry may match. An external wallet has only its address.
type Recipient struct {
	Handle  string   // "@bob" or "@alice/bot", any case; "" for a wallet
	Address [20]byte // the chain address
	Domains []string // registered domain names
}

// recipients is the allowed_recipients entries, indexed for matching.
type recipients struct {
	list     []string // as written, for rendering
	handles  map[string]struct{}
	addrs    map[[20]byte]struct{}
	domains  map[string]struct{}
	suffixes []string // ".example.com" for "*.example.com"
}

// add classifies one entry and adds it to r. It reports whether the entry
// repeats an earlier one (ignoring case).
func (r *recipients) add(entry string) (dup bool, err error) {
	switch {
	case strings.HasPrefix(entry, "@"):
		if !names.IsHandle(entry) && !names.IsAgentHandle(entry) {
			return false, errRecipientShape
		}
		k := strings.ToLower(entry)
		if _, ok := r.handles[k]; ok {
			return true, nil
		}
		r.handles[k] = struct{}{}
	case strings.HasPrefix(entry, "0x") || strings.HasPrefix(entry, "0X"):
		a, err := names.ParseAddress(entry)
		if err != nil {
			return false, err
		}
		if _, ok := r.addrs[a]; ok {
			return true, nil
		}
		r.addrs[a] = struct{}{}
	case strings.HasPrefix(entry, "*"):
		rest, ok := strings.CutPrefix(entry, "*.")
		if !ok || !names.IsDomain(rest) {
			return false, errWildcard
		}
		suffix := "." + strings.ToLower(rest)
		for _, s := range r.suffixes {
			if s == suffix {
				return true, nil
			}
		}
		r.suffixes = append(r.suffixes, suffix)
	default:
		if strings.Contains(entry, "*") {
			return false, errWildcard
		}
		if !names.IsDomain(entry) {
			return false, errRecipientShape
		}
		k := strings.ToLower(entry)
		if _, ok := r.domains[k]; ok {
			return true, nil
		}
		r.domains[k] = struct{}{}
	}
	r.list = append(r.list, entry)
	return false, nil
}

// match reports whether any of to's names matches an entry: its handle or
// a domain exactly (ignoring case), its address, or a domain ending in a
// wildcard's ".suffix" (never the wildcard's apex itself).
func (r *recipients) match(to *Recipient) bool {
	if _, ok := r.addrs[to.Address]; ok {
		return true
	}
	if to.Handle != "" && len(r.handles) > 0 {
		if _, ok := r.handles[lower(to.Handle)]; ok {
			return true
		}
	}
	for _, d := range to.Domains {
		d = lower(d)
		if _, ok := r.domains[d]; ok {
			return true
		}
		for _, s := range r.suffixes {
			if len(d) > len(s) && strings.HasSuffix(d, s) {
				return true
			}
		}
	}
	return false
}

// lower is strings.ToLower for ASCII names, without allocating when s is
// already lower case.
func lower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}
