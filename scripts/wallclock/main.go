// Command wallclock refuses a test that bounds the machine's speed: a
// comparison, in a _test.go file, of a wall-clock duration with a bound
// below the hang limit (5 minutes). CI runners are shared and noisy, and
// such a test fails on a loaded machine whose code is right (CONTRIBUTING.md,
// "How long the tests take"). Bound what load does not change instead: the
// child's CPU time, memory, bytes, counts, the phase a refusal happened in.
//
// A wall-clock duration is time.Since(x), time.Now().Sub(x), either one
// rounded or truncated, a variable assigned one of these, or a struct field
// set to one (r.elapsed). An upper bound is `wall > B`, `wall >= B`, `B <
// wall` or `B <= wall`; a lower bound (a wait lasted at least its TTL) is
// no speed test and is allowed, as is a comparison of two wall-clock
// durations (the slowest so far). B must be a constant of at least 5
// minutes; a bound that is not a constant is refused too.
//
// An exception is one line of the allow-list (-allow, default
// scripts/wallclock/allow.txt): "FILE FUNC reason", FILE relative to the
// root, FUNC the function that holds the comparison; an entry that matches
// nothing is an error, so the list only shrinks.
//
//	go run ./scripts/wallclock [-allow FILE] [ROOT]
//
// It prints each refused comparison as FILE:LINE: message and exits 1 when
// there is one, 2 when it cannot read the tree.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// HangLimit is the shortest wall-clock bound a test may assert.
const HangLimit = 5 * time.Minute

// Finding is one refused comparison.
type Finding struct {
	File string // relative to the root, with slashes
	Line int
	Func string // the enclosing top-level function or method
	Msg  string
}

func (f Finding) String() string { return fmt.Sprintf("%s:%d: %s", f.File, f.Line, f.Msg) }

func main() {
	allow := flag.String("allow", "scripts/wallclock/allow.txt", "the allow-list: FILE FUNC reason, one a line")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	code, err := run(os.Stdout, root, *allow)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wallclock:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

// run checks the tree at root against the allow-list file allowPath ("" or
// missing: none) and prints what it refuses to w; it returns the exit code.
func run(w io.Writer, root, allowPath string) (int, error) {
	found, err := Check(root)
	if err != nil {
		return 2, err
	}
	allowed, err := readAllow(allowPath)
	if err != nil {
		return 2, err
	}
	used := map[string]bool{}
	bad := 0
	for _, f := range found {
		key := f.File + " " + f.Func
		if _, ok := allowed[key]; ok {
			used[key] = true
			continue
		}
		fmt.Fprintln(w, f)
		bad++
	}
	var stale []string
	for k := range allowed {
		if !used[k] {
			stale = append(stale, k)
		}
	}
	sort.Strings(stale)
	for _, k := range stale {
		fmt.Fprintf(w, "%s: allow-list entry %q matches no comparison: remove it\n", allowPath, k)
		bad++
	}
	if bad > 0 {
		fmt.Fprintf(w, "wallclock: %d refused: a test bounds what load does not change (CPU time, memory, counts, the phase), and wall time only as a hang limit of %s or more\n", bad, HangLimit)
		return 1, nil
	}
	return 0, nil
}

// readAllow reads the allow-list: "FILE FUNC reason" lines, # comments.
func readAllow(path string) (map[string]string, error) {
	m := map[string]string{}
	if path == "" {
		return m, nil
	}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return m, nil
	} else if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 3 {
			return nil, fmt.Errorf("%s:%d: want FILE FUNC reason", path, n)
		}
		m[fields[0]+" "+fields[1]] = strings.Join(fields[2:], " ")
	}
	return m, sc.Err()
}

// Check parses every package under root (skipping .git, bin, results,
// testdata and vendor) and returns the refused comparisons in its test
// files, sorted by file and line.
func Check(root string) ([]Finding, error) {
	dirs := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "results", "testdata", "vendor", "node_modules":
				if path != root {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") {
			dirs[filepath.Dir(path)] = append(dirs[filepath.Dir(path)], path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, files := range dirs {
		fs, err := checkDir(root, files)
		if err != nil {
			return nil, err
		}
		out = append(out, fs...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out, nil
}

// pkg is what one directory's files tell: their constants' values and the
// names that hold a wall-clock duration.
type pkg struct {
	consts map[string]float64 // name -> nanoseconds (or a plain number)
	fields map[string]bool    // struct fields set to a wall-clock duration
	vars   map[string]bool    // the current function's variables assigned one
}

func checkDir(root string, paths []string) ([]Finding, error) {
	fset := token.NewFileSet()
	var files []*ast.File
	for _, p := range paths {
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	p := &pkg{consts: map[string]float64{}, fields: map[string]bool{}, vars: map[string]bool{}}
	p.collectConsts(files)
	// Fields that hold wall-clock time, to a fixed point: a field set from
	// a variable that was assigned time.Since, and so on. Variables are
	// the function's own (learnFunc).
	for changed := true; changed; {
		changed = false
		for _, f := range files {
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
					changed = p.learnFunc(fd.Body) || changed
				}
			}
		}
	}
	var out []Finding
	for i, f := range files {
		if !strings.HasSuffix(paths[i], "_test.go") {
			continue
		}
		rel, err := filepath.Rel(root, paths[i])
		if err != nil {
			rel = paths[i]
		}
		rel = filepath.ToSlash(rel)
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			name := fd.Name.Name
			if fd.Recv != nil && len(fd.Recv.List) == 1 {
				name = recvName(fd.Recv.List[0].Type) + "." + name
			}
			p.learnFunc(fd.Body)
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				be, ok := n.(*ast.BinaryExpr)
				if !ok {
					return true
				}
				if msg := p.judge(be); msg != "" {
					out = append(out, Finding{File: rel, Line: fset.Position(be.Pos()).Line, Func: name, Msg: msg})
				}
				return true
			})
		}
	}
	return out, nil
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		return recvName(t.X)
	}
	return "?"
}

// judge returns why the comparison be is refused, or "".
func (p *pkg) judge(be *ast.BinaryExpr) string {
	var upper, bound ast.Expr
	switch be.Op {
	case token.GTR, token.GEQ:
		upper, bound = be.X, be.Y
	case token.LSS, token.LEQ:
		upper, bound = be.Y, be.X
	default:
		return ""
	}
	if !p.wall(upper) || p.wall(bound) {
		return ""
	}
	v, ok := p.eval(bound)
	if !ok {
		return fmt.Sprintf("wall-clock time %s bounded by %s, which is not a constant: bound CPU time, memory or counts, or wall time at %s or more", exprString(upper), exprString(bound), HangLimit)
	}
	if time.Duration(v) < HangLimit {
		return fmt.Sprintf("wall-clock time %s bounded by %s (%s), below the %s hang limit: bound CPU time, memory or counts instead", exprString(upper), exprString(bound), time.Duration(v), HangLimit)
	}
	return ""
}

// learnFunc sets p.vars to the variables of the function body that hold
// wall-clock time, and adds to p.fields the fields it sets to one; it
// reports whether it learned a new field.
func (p *pkg) learnFunc(body *ast.BlockStmt) bool {
	p.vars = map[string]bool{}
	fields := len(p.fields)
	for changed := true; changed; {
		changed = false
		ast.Inspect(body, func(n ast.Node) bool {
			changed = p.learn(n) || changed
			return true
		})
	}
	return len(p.fields) != fields
}

// learn records the names node n makes hold wall-clock time; it reports
// whether it learned one.
func (p *pkg) learn(n ast.Node) bool {
	changed := false
	mark := func(lhs ast.Expr) {
		switch l := lhs.(type) {
		case *ast.Ident:
			if l.Name != "_" && !p.vars[l.Name] {
				p.vars[l.Name], changed = true, true
			}
		case *ast.SelectorExpr:
			if !p.fields[l.Sel.Name] {
				p.fields[l.Sel.Name], changed = true, true
			}
		}
	}
	switch s := n.(type) {
	case *ast.AssignStmt:
		if len(s.Lhs) == len(s.Rhs) {
			for i := range s.Lhs {
				if p.wall(s.Rhs[i]) {
					mark(s.Lhs[i])
				}
			}
		}
	case *ast.ValueSpec:
		for i := range s.Values {
			if i < len(s.Names) && p.wall(s.Values[i]) {
				mark(s.Names[i])
			}
		}
	case *ast.KeyValueExpr:
		if k, ok := s.Key.(*ast.Ident); ok && p.wall(s.Value) && !p.fields[k.Name] {
			p.fields[k.Name], changed = true, true
		}
	}
	return changed
}

// wall reports whether e is a wall-clock duration.
func (p *pkg) wall(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.ParenExpr:
		return p.wall(x.X)
	case *ast.Ident:
		return p.vars[x.Name]
	case *ast.SelectorExpr:
		return p.fields[x.Sel.Name]
	case *ast.CallExpr:
		sel, ok := x.Fun.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		if isPkgSel(sel, "time", "Since") {
			return true
		}
		switch sel.Sel.Name {
		case "Sub": // time.Now().Sub(start)
			if c, ok := sel.X.(*ast.CallExpr); ok {
				if s, ok := c.Fun.(*ast.SelectorExpr); ok && isPkgSel(s, "time", "Now") {
					return true
				}
			}
		case "Round", "Truncate":
			return p.wall(sel.X)
		}
	}
	return false
}

func isPkgSel(s *ast.SelectorExpr, pkgName, name string) bool {
	id, ok := s.X.(*ast.Ident)
	return ok && id.Name == pkgName && s.Sel.Name == name
}

var units = map[string]time.Duration{
	"Nanosecond": time.Nanosecond, "Microsecond": time.Microsecond, "Millisecond": time.Millisecond,
	"Second": time.Second, "Minute": time.Minute, "Hour": time.Hour,
}

// collectConsts evaluates the package's constants it can, to a fixed point.
func (p *pkg) collectConsts(files []*ast.File) {
	for changed := true; changed; {
		changed = false
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				gd, ok := n.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					return true
				}
				for _, s := range gd.Specs {
					vs := s.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if i >= len(vs.Values) {
							break
						}
						if _, known := p.consts[name.Name]; known {
							continue
						}
						if v, ok := p.eval(vs.Values[i]); ok {
							p.consts[name.Name], changed = v, true
						}
					}
				}
				return true
			})
		}
	}
}

// eval computes a constant duration expression in nanoseconds.
func (p *pkg) eval(e ast.Expr) (float64, bool) {
	switch x := e.(type) {
	case *ast.ParenExpr:
		return p.eval(x.X)
	case *ast.BasicLit:
		if x.Kind == token.INT || x.Kind == token.FLOAT {
			v, err := strconv.ParseFloat(strings.ReplaceAll(x.Value, "_", ""), 64)
			return v, err == nil
		}
	case *ast.Ident:
		v, ok := p.consts[x.Name]
		return v, ok
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok && id.Name == "time" {
			u, ok := units[x.Sel.Name]
			return float64(u), ok
		}
	case *ast.UnaryExpr:
		if v, ok := p.eval(x.X); ok && x.Op == token.SUB {
			return -v, true
		}
	case *ast.CallExpr: // time.Duration(n)
		if sel, ok := x.Fun.(*ast.SelectorExpr); ok && isPkgSel(sel, "time", "Duration") && len(x.Args) == 1 {
			return p.eval(x.Args[0])
		}
	case *ast.BinaryExpr:
		a, ok1 := p.eval(x.X)
		b, ok2 := p.eval(x.Y)
		if !ok1 || !ok2 {
			return 0, false
		}
		switch x.Op {
		case token.ADD:
			return a + b, true
		case token.SUB:
			return a - b, true
		case token.MUL:
			return a * b, true
		case token.QUO:
			if b != 0 {
				return a / b, true
			}
		}
	}
	return 0, false
}

// exprString prints a short expression for a message.
func exprString(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return exprString(x.X) + "." + x.Sel.Name
	case *ast.ParenExpr:
		return "(" + exprString(x.X) + ")"
	case *ast.BasicLit:
		return x.Value
	case *ast.CallExpr:
		return exprString(x.Fun) + "(...)"
	case *ast.BinaryExpr:
		return exprString(x.X) + x.Op.String() + exprString(x.Y)
	case *ast.UnaryExpr:
		return x.Op.String() + exprString(x.X)
	}
	return "expression"
}
