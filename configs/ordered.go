package configs

// Ordered is a string-keyed map that remembers insertion order; setting an
// existing key keeps its place (like a Python dict). Globals and const_args
// are expanded in this order.
type Ordered struct {
	keys []string
	m    map[string]any
}

// NewOrdered returns an empty ordered map.
func NewOrdered() *Ordered { return &Ordered{m: map[string]any{}} }

// Set adds or replaces a key.
func (o *Ordered) Set(k string, v any) {
	if _, ok := o.m[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.m[k] = v
}

// SetDefault sets k only when it is absent.
func (o *Ordered) SetDefault(k string, v any) {
	if _, ok := o.m[k]; !ok {
		o.Set(k, v)
	}
}

// Get returns the value of k.
func (o *Ordered) Get(k string) (any, bool) {
	v, ok := o.m[k]
	return v, ok
}

// Has reports whether k is present.
func (o *Ordered) Has(k string) bool { _, ok := o.m[k]; return ok }

// Delete removes k.
func (o *Ordered) Delete(k string) {
	if _, ok := o.m[k]; !ok {
		return
	}
	delete(o.m, k)
	for i, key := range o.keys {
		if key == k {
			o.keys = append(o.keys[:i:i], o.keys[i+1:]...)
			break
		}
	}
}

// Keys returns the keys in order (a copy).
func (o *Ordered) Keys() []string { return append([]string(nil), o.keys...) }

// Len is the number of keys.
func (o *Ordered) Len() int { return len(o.keys) }

// Map returns a plain copy of the contents.
func (o *Ordered) Map() map[string]any {
	out := make(map[string]any, len(o.m))
	for k, v := range o.m {
		out[k] = v
	}
	return out
}

// Copy returns an independent copy (values are shared).
func (o *Ordered) Copy() *Ordered {
	c := &Ordered{keys: append([]string(nil), o.keys...), m: make(map[string]any, len(o.m))}
	for k, v := range o.m {
		c.m[k] = v
	}
	return c
}
