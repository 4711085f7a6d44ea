package obsim

import (
	"slices"
	"strings"
	"unicode"
)

// token is a lexeme of an administrative statement: an identifier or
// keyword (kind 'w', upper-cased in up), a quoted string ('s'), a number
// ('n') or a punctuation character (its own rune).
type token struct {
	kind rune
	text string // the identifier, the string's value, the number or the rune
	up   string // text in upper case, for keywords
}

// lex splits an OceanBase administrative statement into tokens. It is
// tolerant: the statements are OceanBase's, not MySQL's, so the MySQL
// grammar cannot parse them.
func lex(q string) ([]token, *Error) {
	var out []token
	r := []rune(q)
	for i := 0; i < len(r); {
		c := r[i]
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '\'' || c == '"':
			var b strings.Builder
			j := i + 1
			for ; j < len(r); j++ {
				if r[j] == '\\' && j+1 < len(r) {
					j++
					b.WriteRune(r[j])
					continue
				}
				if r[j] == c {
					if j+1 < len(r) && r[j+1] == c {
						b.WriteRune(c)
						j++
						continue
					}
					break
				}
				b.WriteRune(r[j])
			}
			if j >= len(r) {
				return nil, errorf(codeSyntax, "unterminated string near %q", string(r[i:]))
			}
			out = append(out, token{kind: 's', text: b.String()})
			i = j + 1
		case c == '`':
			j := i + 1
			for j < len(r) && r[j] != '`' {
				j++
			}
			if j >= len(r) {
				return nil, errorf(codeSyntax, "unterminated identifier near %q", string(r[i:]))
			}
			w := string(r[i+1 : j])
			out = append(out, token{kind: 'w', text: w, up: strings.ToUpper(w)})
			i = j + 1
		case unicode.IsDigit(c) || (c == '.' && i+1 < len(r) && unicode.IsDigit(r[i+1])):
			j := i
			for j < len(r) && (unicode.IsDigit(r[j]) || r[j] == '.') {
				j++
			}
			// A number glued to letters is a size such as 5G: one word.
			for j < len(r) && (unicode.IsLetter(r[j])) {
				j++
			}
			out = append(out, token{kind: 'n', text: string(r[i:j]), up: strings.ToUpper(string(r[i:j]))})
			i = j
		case unicode.IsLetter(c) || c == '_' || c == '$' || c == '@':
			j := i
			for j < len(r) && (unicode.IsLetter(r[j]) || unicode.IsDigit(r[j]) || strings.ContainsRune("_$@.", r[j])) {
				j++
			}
			w := string(r[i:j])
			out = append(out, token{kind: 'w', text: w, up: strings.ToUpper(w)})
			i = j
		default:
			out = append(out, token{kind: c, text: string(c)})
			i++
		}
	}
	return out, nil
}

// parser walks the tokens of one statement.
type parser struct {
	toks []token
	pos  int
	q    string
}

func newParser(q string) (*parser, *Error) {
	q = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(q), ";"))
	toks, err := lex(q)
	if err != nil {
		return nil, err
	}
	return &parser{toks: toks, q: q}, nil
}

func (p *parser) done() bool { return p.pos >= len(p.toks) }

func (p *parser) peek() token {
	if p.done() {
		return token{}
	}
	return p.toks[p.pos]
}

// keywords consumes the keywords kws in order if they come next.
func (p *parser) keywords(kws ...string) bool {
	if p.pos+len(kws) > len(p.toks) {
		return false
	}
	for i, kw := range kws {
		t := p.toks[p.pos+i]
		if t.kind != 'w' || t.up != kw {
			return false
		}
	}
	p.pos += len(kws)
	return true
}

// punct consumes the punctuation c if it comes next.
func (p *parser) punct(c rune) bool {
	if !p.done() && p.toks[p.pos].kind == c {
		p.pos++
		return true
	}
	return false
}

// value consumes a string, number or identifier and returns its text.
func (p *parser) value() (string, *Error) {
	if p.done() {
		return "", p.syntax()
	}
	t := p.toks[p.pos]
	if t.kind != 's' && t.kind != 'n' && t.kind != 'w' {
		return "", p.syntax()
	}
	p.pos++
	return t.text, nil
}

// list consumes a parenthesised, comma-separated list of values, or a
// single value.
func (p *parser) list() ([]string, *Error) {
	if !p.punct('(') {
		v, err := p.value()
		return []string{v}, err
	}
	var out []string
	for !p.punct(')') {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		p.punct(',')
	}
	return out, nil
}

// options consumes "KEY [=] value-or-list" pairs separated by optional
// commas until the end or one of the stop keywords, returning them keyed by
// upper-case name.
func (p *parser) options(stop ...string) (map[string][]string, *Error) {
	out := map[string][]string{}
	for !p.done() {
		t := p.peek()
		if t.kind == 'w' && slices.Contains(stop, t.up) {
			break
		}
		if t.kind != 'w' {
			return nil, p.syntax()
		}
		p.pos++
		p.punct('=')
		v, err := p.list()
		if err != nil {
			return nil, err
		}
		out[t.up] = v
		p.punct(',')
	}
	return out, nil
}

func (p *parser) syntax() *Error {
	near := ""
	if !p.done() {
		near = p.toks[p.pos].text
	}
	return errorf(codeSyntax, "You have an error in your SQL syntax; near '%s' in: %s", near, p.q)
}

func (p *parser) end() *Error {
	if !p.done() {
		return p.syntax()
	}
	return nil
}
