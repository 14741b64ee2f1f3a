// Package pyrand is Python's random.Random: the Mersenne Twister MT19937
// seeded from an integer as Python seeds it, with Python's random() and
// gauss(). bench uses it where mlos_bench draws random numbers and users
// compare results (MockEnv's noise), so that the same seed gives the same
// numbers as under mlos_bench.
package pyrand

import "math"

const (
	n         = 624
	m         = 397
	matrixA   = 0x9908b0df
	upperMask = 0x80000000
	lowerMask = 0x7fffffff
)

// Rand is a random.Random. It is not safe for concurrent use.
type Rand struct {
	mt        [n]uint32
	mti       int
	gaussNext *float64
}

// New returns a generator seeded as Python's random.Random(seed) seeds it
// (random.seed of an int: the words of |seed| as the key of
// init_by_array).
func New(seed int64) *Rand {
	u := uint64(seed)
	if seed < 0 {
		u = uint64(-seed)
	}
	key := []uint32{uint32(u)}
	if hi := uint32(u >> 32); hi != 0 {
		key = append(key, hi)
	}
	r := &Rand{}
	r.initByArray(key)
	return r
}

func (r *Rand) initGenrand(s uint32) {
	r.mt[0] = s
	for i := 1; i < n; i++ {
		r.mt[i] = 1812433253*(r.mt[i-1]^(r.mt[i-1]>>30)) + uint32(i)
	}
	r.mti = n
}

func (r *Rand) initByArray(key []uint32) {
	r.initGenrand(19650218)
	i, j := 1, 0
	k := max(n, len(key))
	for ; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= n {
			r.mt[0] = r.mt[n-1]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k = n - 1; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= n {
			r.mt[0] = r.mt[n-1]
			i = 1
		}
	}
	r.mt[0] = 0x80000000
}

// Uint32 returns the next 32-bit output (Python's getrandbits(32)).
func (r *Rand) Uint32() uint32 {
	if r.mti >= n {
		for kk := 0; kk < n; kk++ {
			y := (r.mt[kk] & upperMask) | (r.mt[(kk+1)%n] & lowerMask)
			v := r.mt[(kk+m)%n] ^ (y >> 1)
			if y&1 != 0 {
				v ^= matrixA
			}
			r.mt[kk] = v
		}
		r.mti = 0
	}
	y := r.mt[r.mti]
	r.mti++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// Random returns a float in [0, 1) with 53 random bits, as random.random().
func (r *Rand) Random() float64 {
	a := r.Uint32() >> 5
	b := r.Uint32() >> 6
	return (float64(a)*67108864.0 + float64(b)) * (1.0 / 9007199254740992.0)
}

// Gauss returns a normal deviate as random.gauss(mu, sigma) does (two
// deviates per pair of draws, the second kept for the next call).
func (r *Rand) Gauss(mu, sigma float64) float64 {
	z := 0.0
	if r.gaussNext != nil {
		z = *r.gaussNext
		r.gaussNext = nil
	} else {
		x2pi := r.Random() * 2 * math.Pi
		g2rad := math.Sqrt(-2.0 * math.Log(1.0-r.Random()))
		z = math.Cos(x2pi) * g2rad
		next := math.Sin(x2pi) * g2rad
		r.gaussNext = &next
	}
	return mu + z*sigma
}
