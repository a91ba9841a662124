package wrap

import (
	"bytes"
	"fmt"
	"io"
)

// UnifiedDiff writes a unified diff (3 lines of context) from a to b,
// labelled with name, as `diff -u` and `git apply` read it. The edits wrap
// makes are a few lines in files that can be large (~/.claude.json keeps
// every project's history), so lines common to both ends are trimmed first
// and Myers' O(ND) algorithm runs on what is left.
func UnifiedDiff(w io.Writer, name string, a, b []byte) error {
	x, y := splitLines(a), splitLines(b)
	ops := diffLines(x, y)
	if len(ops) == 0 {
		return nil
	}
	if _, err := fmt.Fprintf(w, "--- a/%s\n+++ b/%s\n", name, name); err != nil {
		return err
	}
	const ctx = 3
	// Group the edit script into hunks: runs of changes with at most 2*ctx
	// equal lines between them.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := i - ctx
		if start < 0 {
			start = 0
		}
		for start < i && ops[start].kind != ' ' {
			start++
		}
		end := i
		for {
			for end < len(ops) && ops[end].kind != ' ' {
				end++
			}
			eq := end
			for eq < len(ops) && ops[eq].kind == ' ' {
				eq++
			}
			if eq < len(ops) && eq-end <= 2*ctx {
				end = eq
				continue
			}
			end += ctx
			if end > eq {
				end = eq
			}
			break
		}
		h := ops[start:end]
		ax, by := h[0].ai, h[0].bi
		na, nb := 0, 0
		for _, o := range h {
			if o.kind != '+' {
				na++
			}
			if o.kind != '-' {
				nb++
			}
		}
		if _, err := fmt.Fprintf(w, "@@ -%s +%s @@\n", hunkRange(ax, na), hunkRange(by, nb)); err != nil {
			return err
		}
		for _, o := range h {
			line := o.line
			if _, err := fmt.Fprintf(w, "%c%s", o.kind, line); err != nil {
				return err
			}
			if !bytes.HasSuffix(line, []byte("\n")) {
				if _, err := io.WriteString(w, "\n\\ No newline at end of file\n"); err != nil {
					return err
				}
			}
		}
		i = end
	}
	return nil
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

type diffOp struct {
	kind   byte // ' ', '-', '+'
	ai, bi int  // line index in a and b where this op sits
	line   []byte
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, b)
			break
		}
		out = append(out, b[:i+1])
		b = b[i+1:]
	}
	return out
}

// diffLines returns the edit script from x to y.
func diffLines(x, y [][]byte) []diffOp {
	pre := 0
	for pre < len(x) && pre < len(y) && bytes.Equal(x[pre], y[pre]) {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && bytes.Equal(x[len(x)-1-suf], y[len(y)-1-suf]) {
		suf++
	}
	if pre == len(x) && pre == len(y) {
		return nil
	}
	var ops []diffOp
	for i := 0; i < pre; i++ {
		ops = append(ops, diffOp{' ', i, i, x[i]})
	}
	mx, my := x[pre:len(x)-suf], y[pre:len(y)-suf]
	for _, o := range myers(mx, my) {
		o.ai += pre
		o.bi += pre
		ops = append(ops, o)
	}
	for i := 0; i < suf; i++ {
		ai, bi := len(x)-suf+i, len(y)-suf+i
		ops = append(ops, diffOp{' ', ai, bi, x[ai]})
	}
	return ops
}

// myers is Myers' greedy shortest edit script, keeping each round's
// frontier to walk the path back.
func myers(x, y [][]byte) []diffOp {
	n, m := len(x), len(y)
	max := n + m
	off := max + 1
	v := make([]int, 2*max+3)
	var trace [][]int
	var dEnd int
outer:
	for d := 0; d <= max; d++ {
		trace = append(trace, append([]int(nil), v...))
		for k := -d; k <= d; k += 2 {
			var i int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				i = v[off+k+1]
			} else {
				i = v[off+k-1] + 1
			}
			j := i - k
			for i < n && j < m && bytes.Equal(x[i], y[j]) {
				i++
				j++
			}
			v[off+k] = i
			if i >= n && j >= m {
				dEnd = d
				break outer
			}
		}
	}
	var rev []diffOp
	i, j := n, m
	for d := dEnd; d > 0; d-- {
		vd := trace[d]
		k := i - j
		var pk int
		if k == -d || (k != d && vd[off+k-1] < vd[off+k+1]) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		pi := vd[off+pk]
		pj := pi - pk
		// The snake of round d runs from the point after the edit to (i, j).
		mi, mj := pi, pj+1 // an insertion moves down in y
		if pk == k-1 {
			mi, mj = pi+1, pj // a deletion moves right in x
		}
		for i > mi && j > mj {
			i--
			j--
			rev = append(rev, diffOp{' ', i, j, x[i]})
		}
		if pk == k+1 {
			j--
			rev = append(rev, diffOp{'+', i, j, y[j]})
		} else {
			i--
			rev = append(rev, diffOp{'-', i, j, x[i]})
		}
		i, j = pi, pj
	}
	for i > 0 && j > 0 {
		i--
		j--
		rev = append(rev, diffOp{' ', i, j, x[i]})
	}
	ops := make([]diffOp, len(rev))
	for a, o := range rev {
		ops[len(rev)-1-a] = o
	}
	return ops
}
