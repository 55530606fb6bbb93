package decrypt

import (
	"bytes"
	"errors"
	"testing"
)

func TestBase64(t *testing.T) {
	for _, b := range [][]byte{nil, {0}, {0xfb, 0xff}, bytes.Repeat([]byte{0xfe}, 82)} {
		s := EncodeBase64(b)
		got, err := DecodeBase64(s)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("round trip of %d bytes: %v", len(b), err)
		}
	}
	if s := EncodeBase64([]byte{0xfb, 0xff}); s != "-_8" {
		t.Fatalf("EncodeBase64 = %q, want URL alphabet without padding", s)
	}
	for _, s := range []string{
		"-_8=",     // padding
		"+/8",      // standard alphabet
		"-_\n8",    // line break
		"-_\r8",    // carriage return
		"-_9",      // non-zero trailing bits
		"A",        // impossible length
		"AAAA AAA", // space
	} {
		if _, err := DecodeBase64(s); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: got %v, want ErrMalformed", s, err)
		}
	}
}
