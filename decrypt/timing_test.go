package decrypt

import (
	"flag"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// A dudect-style timing test (Reparaz, Balasch, Verbauwhede 2017): time
// one multiplication per measurement, the class of its secret scalar drawn
// at random per measurement so that drift in the machine's load hits both
// classes alike, drop the slowest 10 % (preemption), and compare the two
// classes' means with Welch's t-test. |t| > 4.5 suggests, and |t| > 10
// shows, that the time depends on the class.
//
// By default (and in CI) the run is brief and only reports t: a few dozen
// measurements on a shared machine decide nothing and must never flake.
// The long run, by hand, asserts |t| < 10 for every constant-time path:
//
//	go test ./decrypt -run TestTimingDudect -v -dudect 20000
//
// (2 × 20,000 measurements per path and pair of classes, a few minutes). decred's
// variable-time ScalarBaseMultNonConst runs as a positive control: it must show a large |t| for small against random scalars, or
// the test has no power on that machine.

// dudectN is the number of measurements per class of the long run.
var dudectN = flag.Int("dudect", 0, "measurements per class for TestTimingDudect; 0 for the brief, report-only run")

type timedPath struct {
	name     string
	constant bool // assert in the long run
	mul      func(k *secp256k1.ModNScalar)
}

type classPair struct {
	name string
	a, b func(r *rand.Rand) secp256k1.ModNScalar
}

// welch returns Welch's t statistic of xs against ys.
func welch(xs, ys []float64) float64 {
	variance := func(v []float64, m float64) float64 {
		s := 0.0
		for _, x := range v {
			s += (x - m) * (x - m)
		}
		return s / float64(len(v)-1)
	}
	mx, my := mean(xs), mean(ys)
	vx, vy := variance(xs, mx), variance(ys, my)
	return (mx - my) / math.Sqrt(vx/float64(len(xs))+vy/float64(len(ys)))
}

// randScalarFrom draws a scalar in [1, n) from r (test data only).
func randScalarFrom(r *rand.Rand) secp256k1.ModNScalar {
	var b [32]byte
	for {
		for i := range 4 {
			v := r.Uint64()
			for j := range 8 {
				b[8*i+j] = byte(v >> (8 * j))
			}
		}
		var s secp256k1.ModNScalar
		if s.SetBytes(&b) == 0 && !s.IsZero() {
			return s
		}
	}
}

// lowWeight has 1 to 4 bits set; highWeight is 2^255 − 1 with 1 to 4 bits
// cleared (both below n).
func lowWeight(r *rand.Rand) secp256k1.ModNScalar {
	v := new(big.Int)
	for range 1 + r.IntN(4) {
		v.SetBit(v, r.IntN(256), 1)
	}
	if v.Cmp(curveN) >= 0 {
		v.SetBit(v, 255, 0)
	}
	return bigToScalarNoT(v)
}

func highWeight(r *rand.Rand) secp256k1.ModNScalar {
	v := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(1))
	for range 1 + r.IntN(4) {
		v.SetBit(v, r.IntN(255), 0)
	}
	return bigToScalarNoT(v)
}

// smallScalar is in [1, 2^64): its GLV split is k1 = k, k2 = 0.
func smallScalar(r *rand.Rand) secp256k1.ModNScalar {
	return bigToScalarNoT(new(big.Int).SetUint64(r.Uint64() | 1))
}

func bigToScalarNoT(v *big.Int) secp256k1.ModNScalar {
	var b [32]byte
	var s secp256k1.ModNScalar
	s.SetBytes((*[32]byte)(v.FillBytes(b[:])))
	return s
}

func TestTimingDudect(t *testing.T) {
	n := *dudectN
	long := n > 0
	if !long {
		n = 40
		if testing.Short() || raceEnabled {
			n = 8
		}
	}
	fixed := testScalar(t, "dudect fixed", 0)
	p := ctScalarMult(ptr(testScalar(t, "dudect point", 0)), &generator)
	paths := []timedPath{
		{"k·P GLV, signed window (new)", true, func(k *secp256k1.ModNScalar) { ctScalarMult(k, &p) }},
		{"k·G comb (new)", true, func(k *secp256k1.ModNScalar) { ctScalarBaseMult(k) }},
		{"k·P fixed window (before issue 27)", true, func(k *secp256k1.ModNScalar) { oldCtScalarMult(k, &p) }},
		{"decred ScalarBaseMultNonConst (variable time: control)", false, func(k *secp256k1.ModNScalar) {
			var out secp256k1.JacobianPoint
			secp256k1.ScalarBaseMultNonConst(k, &out)
		}},
	}
	pairs := []classPair{
		{"fixed vs random", func(*rand.Rand) secp256k1.ModNScalar { return fixed }, randScalarFrom},
		{"low vs high Hamming weight", lowWeight, highWeight},
		{"small (< 2^64) vs random", smallScalar, randScalarFrom},
	}
	baseTable()
	r := rand.New(rand.NewPCG(27, 1))
	for _, path := range paths {
		for _, pair := range pairs {
			// Draw every input first, so that only the multiplication is timed.
			inputs := make([]secp256k1.ModNScalar, 2*n)
			class := make([]bool, 2*n)
			for i := range inputs {
				class[i] = r.IntN(2) == 1
				if class[i] {
					inputs[i] = pair.b(r)
				} else {
					inputs[i] = pair.a(r)
				}
			}
			times := make([]float64, len(inputs))
			for i := range inputs {
				start := time.Now()
				path.mul(&inputs[i])
				times[i] = float64(time.Since(start))
			}
			// Drop the slowest 10 % of all measurements.
			cut := slices.Clone(times)
			slices.Sort(cut)
			limit := cut[len(cut)*9/10]
			var xs, ys []float64
			for i, d := range times {
				if d > limit {
					continue
				}
				if class[i] {
					ys = append(ys, d)
				} else {
					xs = append(xs, d)
				}
			}
			if len(xs) < 2 || len(ys) < 2 {
				continue
			}
			tv := welch(xs, ys)
			t.Logf("%-56s %-28s n=%d/%d means %.1f/%.1f µs t=%+.2f", path.name, pair.name, len(xs), len(ys), mean(xs)/1e3, mean(ys)/1e3, tv)
			if long && path.constant && math.Abs(tv) > 10 {
				t.Errorf("%s, %s: |t| = %.1f > 10: the time depends on the scalar's class", path.name, pair.name, math.Abs(tv))
			}
		}
	}
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}
