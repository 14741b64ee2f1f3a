package tunables

// The normalized search space: the view of a set of tunables that
// optimizers work in. Each tunable becomes one or two dimensions:
//
//   - categorical: one DimCategorical with one choice per value;
//   - int or float without special values: one DimNumeric whose unit
//     coordinate u in [0,1] maps onto the range (log scale when Log is set);
//   - int or float with special values: a DimCategorical named
//     "<name>!special" with 1+len(special) choices (choice 0 = "use the
//     range", choice i = special[i-1]) followed by the DimNumeric; the numeric
//     coordinate is ignored while a special value is chosen.
//
// A Point holds one float64 per dimension: the unit coordinate for numeric
// dimensions and the choice index (0, 1, 2, ...) for categorical ones.

// DimKind is the kind of a dimension.
type DimKind int

const (
	// DimNumeric is a unit interval [0,1], continuous or with Levels
	// equally spaced levels (ints and quantized tunables).
	DimNumeric DimKind = iota
	// DimCategorical is an unordered set of Choices choices.
	DimCategorical
)

// Dim is one dimension of the normalized space.
type Dim struct {
	Name    string // tunable name, or "<name>!special" for the special-value selector
	Tunable string // the tunable this dimension belongs to
	Kind    DimKind

	// Numeric dimensions. Levels > 1 means only Levels equally spaced unit
	// values 0, 1/(Levels-1), ..., 1 are valid (ints: range size, quantized:
	// bins); Levels == 0 means continuous. Log tells that the unit
	// coordinate is already on a log scale of the tunable's range.
	Levels int
	Log    bool

	// Categorical dimensions: number of choices and their prior weights
	// (nil = uniform), taken from values_weights or special_weights +
	// range_weight.
	Choices int
	Weights []float64
}

// Point is a position in the normalized space, one coordinate per Dim.
type Point []float64
