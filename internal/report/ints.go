package report

import "encoding/binary"

// Ints is a list of int64 packed for a history of millions of operations:
// its length, then each element's difference from the one before it (the
// first's from 0), as zigzag varints. A lock-append read list, whose
// elements grow by a little each, so takes a byte or two an element
// instead of eight. The zero Ints is no list (List gives nil); an empty
// list packs to its length, 0, and gives an empty list back.
type Ints []byte

// PackInts packs l.
func PackInts(l []int64) Ints {
	if l == nil {
		return nil
	}
	var tmp [binary.MaxVarintLen64]byte
	size := binary.PutUvarint(tmp[:], uint64(len(l)))
	prev := int64(0)
	for _, v := range l {
		size += binary.PutVarint(tmp[:], v-prev)
		prev = v
	}
	b := make([]byte, 0, size) // exactly: a million of them
	b = binary.AppendUvarint(b, uint64(len(l)))
	prev = 0
	for _, v := range l {
		b = binary.AppendVarint(b, v-prev)
		prev = v
	}
	return Ints(b)
}

// List is the list p packs: a new slice each call (nil for the zero Ints,
// and for bytes that are not a packed list).
func (p Ints) List() []int64 {
	if p == nil {
		return nil
	}
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)) {
		return nil
	}
	l := make([]int64, 0, n)
	prev := int64(0)
	for i := k; uint64(len(l)) < n; {
		d, k := binary.Varint(p[i:])
		if k <= 0 {
			return nil
		}
		i += k
		prev += d
		l = append(l, prev)
	}
	return l
}
