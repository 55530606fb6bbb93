// Package names is the one grammar of the fakeserver's names: account
// handles, agent names and handles, domain names, EVM addresses and the ids
// and secrets it invents. The server (accounts, recipients, domains) and
// the spend-policy judge (allowed_recipients) both use it.
package names

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"

	"github.com/ethereum/go-ethereum/common"
)

var (
	handleRE      = regexp.MustCompile(`^@[A-Za-z0-9_]{3,20}$`)
	agentNameRE   = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)
	agentHandleRE = regexp.MustCompile(`^@[A-Za-z0-9_]{3,20}/[A-Za-z0-9_-]{1,32}$`)
	domainRE      = regexp.MustCompile(`^(?i:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.(?i:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?))+$`)
)

// IsHandle reports whether s is an account handle: "@" then 3 to 20 of
// A-Z a-z 0-9 _. Handles are unique ignoring case.
func IsHandle(s string) bool { return handleRE.MatchString(s) }

// IsAgentName reports whether s is a new agent's name: 1 to 32 of a-z 0-9
// _ -. The agent's handle is its owner's handle, "/", and the name.
func IsAgentName(s string) bool { return agentNameRE.MatchString(s) }

// IsAgentHandle reports whether s is an agent handle, "@owner/name", in
// any case (a recipient may write it so).
func IsAgentHandle(s string) bool { return agentHandleRE.MatchString(s) }

// IsDomain reports whether s is a DNS name of at least two labels, each 1
// to 63 of letters, digits and inner hyphens, 253 bytes in all at most.
func IsDomain(s string) bool { return len(s) <= 253 && domainRE.MatchString(s) }

// ErrAddress is ParseAddress's refusal; its text can be shown to a caller
// (it never echoes the input).
var ErrAddress = errors.New("must be 0x then 40 hex digits, and mixed case must pass the EIP-55 checksum")

// ParseAddress checks an EVM address: "0x" then 40 hex digits; a mixed-case
// one must pass the EIP-55 checksum (all lower or all upper case carries
// none).
func ParseAddress(s string) (common.Address, error) {
	if len(s) != 42 || s[:2] != "0x" {
		return common.Address{}, ErrAddress
	}
	raw := s[2:]
	var a common.Address
	if _, err := hex.Decode(a[:], []byte(raw)); err != nil {
		return common.Address{}, ErrAddress
	}
	if raw != strings.ToLower(raw) && raw != strings.ToUpper(raw) && a.Hex() != s {
		return common.Address{}, ErrAddress
	}
	return a, nil
}

// Alphabets of invented names.
const (
	LowerAlnum = "abcdefghijklmnopqrstuvwxyz0123456789"
	Base62     = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
)

// NewID returns prefix (such as "req_" or "whk_") and 20 random characters
// of LowerAlnum.
func NewID(prefix string) string { return prefix + Random(LowerAlnum, 20) }

// Random returns n characters drawn uniformly from alphabet (at most 256
// characters) with crypto/rand, for ids and secrets.
func Random(alphabet string, n int) string {
	b := make([]byte, n)
	buf := make([]byte, n*2)
	limit := 256 - 256%len(alphabet)
	for i := 0; i < n; {
		_, _ = rand.Read(buf) // never fails (crypto/rand, Go 1.24 and later)
		for _, x := range buf {
			if int(x) >= limit {
				continue
			}
			b[i] = alphabet[int(x)%len(alphabet)]
			i++
			if i == n {
				break
			}
		}
	}
	return string(b)
}
