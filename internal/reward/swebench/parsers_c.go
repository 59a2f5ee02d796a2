package swebench

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"maps"
	"strings"

	"github.com/swerve-dev/swerve/internal/task"
)

func init() {
	RegisterParser("parse_log_redis", parseRedis)
	RegisterParser("parse_log_jq", parseJQ)
	RegisterParser("parse_log_doctest", parseDoctest)
	RegisterParser("parse_log_micropython_test", parseMicroPythonTest)
	RegisterParser("parse_log_googletest", parseGoogleTest)
}

var (
	redisResult = mlLazy(`^\[(ok|err|skip|ignore)\]:\s(.+?)(?:\s\((\d+\s*m?s)\))?$`)
	redisInFile = mlLazy(`\s+in\s+\S+$`)
)

// parseRedis reads redis/valkey's test runner lines "[ok]: name (12 ms)",
// "[err]: name in tests/unit/x.tcl", "[skip]: name", "[ignore]: name". A
// failure's trailing " in <file>" is cut off.
func parseRedis(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for _, line := range mlLines(log) {
		m := redisResult.FindStringSubmatch(pyStrip(line))
		if m == nil {
			continue
		}
		name := m[2]
		switch m[1] {
		case "ok":
			w.Set(sm, name, Passed)
		case "err":
			w.Set(sm, redisInFile.ReplaceAllString(name, ""), Failed)
		case "skip", "ignore":
			w.Set(sm, name, Skipped)
		}
	}
	return w.Apply(sm)
}

var jqResult = mlLazy(`^\s*(PASS|FAIL):\s(.+)$`)

// parseJQ reads automake test-driver lines "PASS: tests/jqtest" and
// "FAIL: tests/shtest". Other automake results (SKIP, XFAIL, ERROR) are not
// recorded.
func parseJQ(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for _, line := range mlLines(log) {
		m := jqResult.FindStringSubmatch(pyStrip(line))
		if m == nil {
			continue
		}
		if m[1] == "PASS" {
			w.Set(sm, m[2], Passed)
		} else {
			w.Set(sm, m[2], Failed)
		}
	}
	return w.Apply(sm)
}

var microPythonResult = mlLazy(`^(pass|FAIL|skip)\s+(.+)$`)

// parseMicroPythonTest reads run-tests.py lines "pass  basics/int.py",
// "FAIL  ...", "skip  ...".
func parseMicroPythonTest(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for _, line := range mlLines(log) {
		m := microPythonResult.FindStringSubmatch(pyStrip(line))
		if m == nil {
			continue
		}
		switch m[1] {
		case "pass":
			w.Set(sm, m[2], Passed)
		case "FAIL":
			w.Set(sm, m[2], Failed)
		case "skip":
			w.Set(sm, m[2], Skipped)
		}
	}
	return w.Apply(sm)
}

var googleTestResult = mlLazy(`^.*\[\s*(OK|FAILED)\s*\]\s(.*)\s\(.*\)$`)

// parseGoogleTest reads "[       OK ] Suite.Test (0 ms)" and
// "[  FAILED  ] Suite.Test (1 ms)". The name runs to the last " (" before the
// closing parenthesis, so the summary's "[  FAILED  ] Suite.Test, where
// GetParam() = (1, 2)" counts as well, under the name upstream gives it.
func parseGoogleTest(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for _, line := range mlLines(log) {
		m := googleTestResult.FindStringSubmatch(pyStrip(line))
		if m == nil {
			continue
		}
		if m[1] == "OK" {
			w.Set(sm, m[2], Passed)
		} else {
			w.Set(sm, m[2], Failed)
		}
	}
	return w.Apply(sm)
}

// parseDoctest reads the XML report of a doctest binary run with -s -r=xml:
// the text from the first "<doctest" to the next "</doctest>" is parsed as a
// document, and every SubCase under a TestCase gets "TestCase > SubCase",
// passed when all the Expression elements under it have success="true".
// Test cases without subcases are not recorded. Where upstream's
// ElementTree would raise (no closing tag, malformed XML) swerve returns no
// results.
func parseDoctest(log string, _ *task.Task) StatusMap {
	const startTag, endTag = "<doctest", "</doctest>"
	start := strings.Index(log, startTag)
	if start < 0 {
		return StatusMap{}
	}
	end := strings.Index(log[start:], endTag)
	if end < 0 {
		// Upstream slices log[start:len(endTag)-1], which is never a
		// document.
		return nil
	}
	root, err := parseXMLTree(log[start : start+end+len(endTag)])
	if err != nil {
		return nil
	}
	sm, w := StatusMap{}, WorstCopy{}
	for _, tc := range root.descendants("TestCase") {
		for _, sc := range tc.descendants("SubCase") {
			name := tc.attr("name") + " > " + sc.attr("name")
			status := Passed
			for _, ex := range sc.descendants("Expression") {
				if v, ok := ex.attrs["success"]; !ok || v != "true" {
					status = Failed
					break
				}
			}
			w.Set(sm, name, status)
		}
	}
	return w.Apply(sm)
}

// xmlNode is the part of an ElementTree element the doctest parser needs.
type xmlNode struct {
	name     string
	attrs    map[string]string
	children []*xmlNode
	ns       map[string]string // prefixes in scope ("" for the default)
}

// attr is ElementTree's str(elem.get(key)): "None" when the attribute is
// missing.
func (n *xmlNode) attr(key string) string {
	if v, ok := n.attrs[key]; ok {
		return v
	}
	return "None"
}

// descendants is ElementTree's findall(".//name"): every element below n
// (not n itself) with that tag, in document order.
func (n *xmlNode) descendants(name string) []*xmlNode {
	var out []*xmlNode
	var walk func(*xmlNode)
	walk = func(e *xmlNode) {
		for _, c := range e.children {
			if c.name == name {
				out = append(out, c)
			}
			walk(c)
		}
	}
	walk(n)
	return out
}

// parseXMLTree parses one XML document the way ElementTree.fromstring does as
// far as the doctest report goes: exactly one root element, nothing but
// white space, comments and processing instructions after it, and literal
// white space in attribute values normalised to spaces. Tags in a namespace
// get ElementTree's "{uri}local" form, so they never equal a plain name.
func parseXMLTree(doc string) (*xmlNode, error) {
	d := xml.NewDecoder(strings.NewReader(normalizeXMLAttrSpace(doc)))
	d.Strict = true
	var root *xmlNode
	var stack []*xmlNode
	closed := false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if closed {
				return nil, errors.New("junk after document element")
			}
			// ElementTree parses with namespaces on: every name must be a
			// QName whose prefix is declared, and no two attributes may
			// share an expanded name.
			scope := map[string]string{"xml": "http://www.w3.org/XML/1998/namespace"}
			if len(stack) > 0 {
				maps.Copy(scope, stack[len(stack)-1].ns)
			}
			for _, a := range tok.Attr {
				if a.Name.Space == "xmlns" {
					scope[a.Name.Local] = a.Value
				} else if a.Name.Space == "" && a.Name.Local == "xmlns" {
					scope[""] = a.Value
				}
			}
			if !xmlQNameBound(tok.Name, scope) {
				return nil, errors.New("bad or unbound name " + tok.Name.Local)
			}
			n := &xmlNode{name: xmlTag(tok.Name), attrs: map[string]string{}, ns: scope}
			for _, a := range tok.Attr {
				if a.Name.Space == "xmlns" || (a.Name.Space == "" && a.Name.Local == "xmlns") {
					continue
				}
				if !xmlQNameBound(a.Name, scope) {
					return nil, errors.New("bad or unbound name " + a.Name.Local)
				}
				key := xmlTag(a.Name)
				if _, dup := n.attrs[key]; dup {
					return nil, errors.New("duplicate attribute " + key)
				}
				n.attrs[key] = a.Value
			}
			if len(stack) == 0 {
				root = n
			} else {
				p := stack[len(stack)-1]
				p.children = append(p.children, n)
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				closed = true
			}
		case xml.CharData:
			if closed && len(bytes.Trim(tok, " \t\r\n")) > 0 {
				return nil, errors.New("junk after document element")
			}
		case xml.ProcInst:
			if strings.EqualFold(tok.Target, "xml") {
				return nil, errors.New("XML declaration not at start")
			}
		case xml.Directive:
			if closed {
				return nil, errors.New("junk after document element")
			}
		}
	}
	if root == nil || !closed {
		return nil, errors.New("no complete document element")
	}
	return root, nil
}

// xmlQNameBound reports whether a decoded name came from a well-formed QName
// whose prefix is in scope. Go's decoder keeps a name with a misplaced or
// second colon whole in Local, and leaves an unbound prefix in Space where a
// bound one becomes its namespace URI.
func xmlQNameBound(n xml.Name, scope map[string]string) bool {
	if strings.Contains(n.Local, ":") {
		return false
	}
	if n.Space == "" {
		return true
	}
	for _, uri := range scope {
		if uri == n.Space {
			return true
		}
	}
	return false
}

func xmlTag(n xml.Name) string {
	if n.Space == "" {
		return n.Local
	}
	return "{" + n.Space + "}" + n.Local
}

// normalizeXMLAttrSpace turns literal tabs, newlines and carriage returns
// inside quoted attribute values into spaces (a CR LF pair into one), as an
// XML parser's attribute-value normalisation does; Go's decoder keeps them.
// Character references such as &#10; are untouched, so they still decode to
// the character itself.
func normalizeXMLAttrSpace(doc string) string {
	if !strings.ContainsAny(doc, "\t\n\r") {
		return doc
	}
	var b strings.Builder
	b.Grow(len(doc))
	i := 0
	for i < len(doc) {
		switch {
		case strings.HasPrefix(doc[i:], "<!--"):
			j := strings.Index(doc[i+4:], "-->")
			if j < 0 {
				b.WriteString(doc[i:])
				return b.String()
			}
			b.WriteString(doc[i : i+4+j+3])
			i += 4 + j + 3
		case strings.HasPrefix(doc[i:], "<![CDATA["):
			j := strings.Index(doc[i+9:], "]]>")
			if j < 0 {
				b.WriteString(doc[i:])
				return b.String()
			}
			b.WriteString(doc[i : i+9+j+3])
			i += 9 + j + 3
		case doc[i] == '<' && i+1 < len(doc) && doc[i+1] != '!' && doc[i+1] != '?' && doc[i+1] != '/':
			i = copyStartTag(&b, doc, i)
		default:
			b.WriteByte(doc[i])
			i++
		}
	}
	return b.String()
}

// copyStartTag copies the tag starting at doc[i] to b, up to and including
// its closing '>', turning white space inside quoted values into spaces. It
// returns the index after the tag.
func copyStartTag(b *strings.Builder, doc string, i int) int {
	var quote byte
	for ; i < len(doc); i++ {
		c := doc[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		case quote == 0 && c == '>':
			b.WriteByte(c)
			return i + 1
		case quote != 0 && (c == '\t' || c == '\n' || c == '\r'):
			if c == '\r' && i+1 < len(doc) && doc[i+1] == '\n' {
				i++
			}
			c = ' '
		}
		b.WriteByte(c)
	}
	return i
}
