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
	"sync"

	"github.com/ethereum/go-ethereum/common"
)

var domainRE = regexp.MustCompile(`^(?i:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.(?i:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?))+$`)

// IsHandle reports whether s is an account handle: "@" then 3 to 20 of
// A-Z a-z 0-9 _. Handles are unique ignoring case.
func IsHandle(s string) bool {
	return len(s) >= 1+3 && len(s) <= 1+20 && s[0] == '@' && all(s[1:], handleChar)
}

// IsAgentName reports whether s is a new agent's name: 1 to 32 of a-z 0-9
// _ -. The agent's handle is its owner's handle, "/", and the name.
func IsAgentName(s string) bool {
	return len(s) >= 1 && len(s) <= 32 && all(s, func(c byte) bool { return lower(c) || digit(c) || c == '_' || c == '-' })
}

// IsAgentHandle reports whether s is an agent handle, "@owner/name", in
// any case (a recipient may write it so).
func IsAgentHandle(s string) bool {
	owner, name, ok := strings.Cut(s, "/")
	return ok && IsHandle(owner) && len(name) >= 1 && len(name) <= 32 &&
		all(name, func(c byte) bool { return handleChar(c) || c == '-' })
}

// The grammar above is written out by hand (a regular expression costs a
// transfer about 1 % of its time); grammar_fuzz_test.go checks it against
// the expressions it replaces.

// all reports whether every byte of s is ok.
func all(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) bool { return 'a' <= c && c <= 'z' }
func digit(c byte) bool { return '0' <= c && c <= '9' }

// handleChar is A-Z a-z 0-9 _.
func handleChar(c byte) bool { return lower(c) || ('A' <= c && c <= 'Z') || digit(c) || c == '_' }

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
func NewID(prefix string) string {
	var r [20]byte
	FillID(r[:])
	var b strings.Builder
	b.Grow(len(prefix) + len(r))
	b.WriteString(prefix)
	b.Write(r[:])
	return b.String()
}

// FillID fills dst with characters drawn uniformly from LowerAlnum, the
// random part of an id. The random bytes come from crypto/rand, as
// Random's do, but read a block at a time (idBlocks): an id costs no read
// of its own. Secrets (Random) never come from these blocks, so no byte
// of a future secret waits in memory.
func FillID(dst []byte) {
	const limit = 256 - 256%len(LowerAlnum)
	r := idBlocks.Get().(*randBlock)
	for i := 0; i < len(dst); {
		if r.used == len(r.b) {
			_, _ = rand.Read(r.b[:]) // never fails (crypto/rand, Go 1.24 and later)
			r.used = 0
		}
		x := r.b[r.used]
		r.used++
		if int(x) >= limit {
			continue
		}
		dst[i] = LowerAlnum[int(x)%len(LowerAlnum)]
		i++
	}
	idBlocks.Put(r)
}

// randBlock is random bytes from crypto/rand not used yet: b[used:].
// Every byte is used once at most.
type randBlock struct {
	b    [512]byte
	used int
}

// idBlocks are FillID's blocks, one per P as sync.Pool keeps them (a
// block the pool drops takes its unused bytes with it).
var idBlocks = sync.Pool{New: func() any { return &randBlock{used: len(randBlock{}.b)} }}

// Random returns n characters drawn uniformly from alphabet (at most 256
// characters) with crypto/rand, for ids and secrets.
func Random(alphabet string, n int) string {
	var b strings.Builder
	b.Grow(n)
	appendRandom(&b, alphabet, n)
	return b.String()
}

// appendRandom writes n characters drawn uniformly from alphabet to b:
// random bytes at or past the largest multiple of len(alphabet) are
// skipped, so that every character is as likely. The random bytes are
// read into a buffer on the stack (an id costs one allocation, its text).
func appendRandom(b *strings.Builder, alphabet string, n int) {
	limit := 256 - 256%len(alphabet)
	var buf [64]byte
	chunk := buf[:min(2*n, len(buf))]
	for i := 0; i < n; {
		_, _ = rand.Read(chunk) // never fails (crypto/rand, Go 1.24 and later)
		for _, x := range chunk {
			if int(x) >= limit {
				continue
			}
			b.WriteByte(alphabet[int(x)%len(alphabet)])
			i++
			if i == n {
				break
			}
		}
	}
}
