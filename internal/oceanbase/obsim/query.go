package obsim

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/dolthub/vitess/go/vt/sqlparser"
)

// table is a view's rows: column names in lower case and values that are
// nil (NULL), string, int64, float64 or time.Time.
type table struct {
	cols []string
	rows [][]any
}

// result is a statement's answer: a result set, or the rows affected.
type result struct {
	Fields   []string    `json:"fields,omitempty"`
	Types    []string    `json:"types,omitempty"`
	Rows     [][]*string `json:"rows,omitempty"`
	Affected uint64      `json:"affected,omitempty"`
}

// dollarIdent matches identifiers with a '$' (GV$OB_PARAMETERS), which
// OceanBase accepts and the MySQL grammar of the parser does not.
var dollarIdent = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*\$[A-Za-z0-9_$]*)`)

// selectQuery answers a SELECT over the simulator's views: a projection of
// columns, literals, lower/upper/coalesce/ifnull and count(*), with WHERE
// (=, <>, <, >, IN, LIKE, IS [NOT] NULL, AND, OR, NOT), ORDER BY and LIMIT
// over one view. Anything else is refused, so that a statement Steward
// starts to send is added here on purpose.
func selectQuery(q string, views func(name string) (table, *Error)) (*result, *Error) {
	stmt, err := sqlparser.Parse(dollarIdent.ReplaceAllString(q, "`$1`"))
	if err != nil {
		return nil, errorf(codeSyntax, "%v", err)
	}
	sel, ok := stmt.(*sqlparser.Select)
	if !ok {
		return nil, errorf(codeSyntax, "the simulator answers SELECT over one view only: %s", q)
	}
	var t table
	switch len(sel.From) {
	case 0:
		t = table{rows: [][]any{{}}}
	case 1:
		ate, ok := sel.From[0].(*sqlparser.AliasedTableExpr)
		if !ok {
			return nil, errorf(codeSyntax, "the simulator answers SELECT over one view only: %s", q)
		}
		tn, ok := ate.Expr.(sqlparser.TableName)
		if !ok {
			return nil, errorf(codeSyntax, "the simulator answers SELECT over one view only: %s", q)
		}
		if db := tn.DbQualifier.String(); db != "" && !strings.EqualFold(db, "oceanbase") {
			return nil, missing("Unknown database '%s'", db)
		}
		var e *Error
		if t, e = views(strings.ToUpper(tn.Name.String())); e != nil {
			return nil, e
		}
	default:
		return nil, errorf(codeSyntax, "the simulator answers SELECT over one view only: %s", q)
	}
	var rows [][]any
	for _, row := range t.rows {
		env := rowEnv(t.cols, row)
		if sel.Where != nil {
			v, e := eval(sel.Where.Expr, env)
			if e != nil {
				return nil, e
			}
			if !truthy(v) {
				continue
			}
		}
		rows = append(rows, row)
	}
	if len(sel.OrderBy) > 0 {
		var sortErr *Error
		sort.SliceStable(rows, func(i, j int) bool {
			for _, o := range sel.OrderBy {
				a, e1 := eval(o.Expr, rowEnv(t.cols, rows[i]))
				b, e2 := eval(o.Expr, rowEnv(t.cols, rows[j]))
				if e1 != nil || e2 != nil {
					sortErr = firstErr(e1, e2)
					return false
				}
				c := compare(a, b)
				if c == 0 {
					continue
				}
				if o.Direction == sqlparser.DescScr {
					return c > 0
				}
				return c < 0
			}
			return false
		})
		if sortErr != nil {
			return nil, sortErr
		}
	}
	return project(sel, t.cols, rows)
}

func project(sel *sqlparser.Select, cols []string, rows [][]any) (*result, *Error) {
	res := &result{}
	aggregate := false
	var exprs []sqlparser.Expr
	for _, se := range sel.SelectExprs {
		switch se := se.(type) {
		case *sqlparser.StarExpr:
			for _, c := range cols {
				exprs = append(exprs, &sqlparser.ColName{Name: sqlparser.NewColIdent(c)})
				res.Fields = append(res.Fields, c)
			}
		case *sqlparser.AliasedExpr:
			exprs = append(exprs, se.Expr)
			name := se.As.String()
			if name == "" {
				if cn, ok := se.Expr.(*sqlparser.ColName); ok {
					name = cn.Name.String()
				} else {
					name = se.InputExpression
				}
			}
			res.Fields = append(res.Fields, name)
			if isCountStar(se.Expr) {
				aggregate = true
			}
		default:
			return nil, errorf(codeSyntax, "unsupported select expression %s", sqlparser.String(se))
		}
	}
	var out [][]any
	if aggregate {
		first := make([]any, len(cols))
		if len(rows) > 0 {
			first = rows[0]
		}
		row := make([]any, len(exprs))
		for i, e := range exprs {
			if isCountStar(e) {
				row[i] = int64(len(rows))
				continue
			}
			v, err := eval(e, rowEnv(cols, first))
			if err != nil {
				return nil, err
			}
			row[i] = v
		}
		out = [][]any{row}
	} else {
		for _, r := range rows {
			row := make([]any, len(exprs))
			for i, e := range exprs {
				v, err := eval(e, rowEnv(cols, r))
				if err != nil {
					return nil, err
				}
				row[i] = v
			}
			out = append(out, row)
		}
	}
	if sel.Limit != nil && sel.Limit.Rowcount != nil {
		v, err := eval(sel.Limit.Rowcount, nil)
		if err != nil {
			return nil, err
		}
		if n, ok := v.(int64); ok && int(n) < len(out) {
			out = out[:n]
		}
	}
	res.Types = make([]string, len(res.Fields))
	for i := range res.Types {
		res.Types[i] = "s"
		for _, r := range out {
			if r[i] != nil {
				res.Types[i] = typeCode(r[i])
				break
			}
		}
	}
	for _, r := range out {
		row := make([]*string, len(r))
		for i, v := range r {
			if v != nil {
				s := format(v)
				row[i] = &s
			}
		}
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

func isCountStar(e sqlparser.Expr) bool {
	f, ok := e.(*sqlparser.FuncExpr)
	if !ok || !f.Name.EqualString("count") || len(f.Exprs) != 1 {
		return false
	}
	_, star := f.Exprs[0].(*sqlparser.StarExpr)
	return star
}

func rowEnv(cols []string, row []any) map[string]any {
	env := make(map[string]any, len(cols))
	for i, c := range cols {
		if i < len(row) {
			env[c] = row[i]
		}
	}
	return env
}

func eval(e sqlparser.Expr, env map[string]any) (any, *Error) {
	switch e := e.(type) {
	case *sqlparser.ColName:
		name := strings.ToLower(e.Name.String())
		v, ok := env[name]
		if !ok {
			return nil, errorf(1054, "Unknown column '%s' in 'field list'", e.Name.String())
		}
		return v, nil
	case *sqlparser.SQLVal:
		switch e.Type {
		case sqlparser.IntVal:
			n, err := strconv.ParseInt(string(e.Val), 10, 64)
			if err != nil {
				return nil, invalid("bad number %s", e.Val)
			}
			return n, nil
		case sqlparser.FloatVal:
			f, err := strconv.ParseFloat(string(e.Val), 64)
			if err != nil {
				return nil, invalid("bad number %s", e.Val)
			}
			return f, nil
		default:
			return string(e.Val), nil
		}
	case *sqlparser.NullVal:
		return nil, nil
	case sqlparser.BoolVal:
		return bool(e), nil
	case *sqlparser.ParenExpr:
		return eval(e.Expr, env)
	case *sqlparser.AndExpr:
		l, err := eval(e.Left, env)
		if err != nil {
			return nil, err
		}
		r, err := eval(e.Right, env)
		return truthy(l) && truthy(r), err
	case *sqlparser.OrExpr:
		l, err := eval(e.Left, env)
		if err != nil {
			return nil, err
		}
		r, err := eval(e.Right, env)
		return truthy(l) || truthy(r), err
	case *sqlparser.NotExpr:
		v, err := eval(e.Expr, env)
		return !truthy(v), err
	case *sqlparser.IsExpr:
		v, err := eval(e.Expr, env)
		switch e.Operator {
		case sqlparser.IsNullStr:
			return v == nil, err
		case sqlparser.IsNotNullStr:
			return v != nil, err
		}
	case *sqlparser.ComparisonExpr:
		return compareExpr(e, env)
	case *sqlparser.FuncExpr:
		return call(e, env)
	}
	return nil, errorf(codeSyntax, "the simulator does not evaluate %s", sqlparser.String(e))
}

func compareExpr(e *sqlparser.ComparisonExpr, env map[string]any) (any, *Error) {
	l, err := eval(e.Left, env)
	if err != nil {
		return nil, err
	}
	if e.Operator == sqlparser.InStr || e.Operator == sqlparser.NotInStr {
		tuple, ok := e.Right.(sqlparser.ValTuple)
		if !ok {
			return nil, errorf(codeSyntax, "IN needs a list of values")
		}
		found := false
		for _, x := range tuple {
			v, err := eval(x, env)
			if err != nil {
				return nil, err
			}
			if l != nil && v != nil && compare(l, v) == 0 {
				found = true
			}
		}
		return found == (e.Operator == sqlparser.InStr), nil
	}
	r, err := eval(e.Right, env)
	if err != nil {
		return nil, err
	}
	if l == nil || r == nil {
		return false, nil
	}
	c := compare(l, r)
	switch e.Operator {
	case sqlparser.EqualStr:
		return c == 0, nil
	case sqlparser.NotEqualStr:
		return c != 0, nil
	case sqlparser.LessThanStr:
		return c < 0, nil
	case sqlparser.GreaterThanStr:
		return c > 0, nil
	case sqlparser.LessEqualStr:
		return c <= 0, nil
	case sqlparser.GreaterEqualStr:
		return c >= 0, nil
	case sqlparser.LikeStr, sqlparser.NotLikeStr:
		re := "(?is)^" + strings.NewReplacer("%", ".*", "_", ".").Replace(regexp.QuoteMeta(format(r))) + "$"
		m := regexp.MustCompile(re).MatchString(format(l))
		return m == (e.Operator == sqlparser.LikeStr), nil
	}
	return nil, errorf(codeSyntax, "the simulator does not evaluate %s", e.Operator)
}

func call(e *sqlparser.FuncExpr, env map[string]any) (any, *Error) {
	var args []any
	for _, a := range e.Exprs {
		ae, ok := a.(*sqlparser.AliasedExpr)
		if !ok {
			return nil, errorf(codeSyntax, "unsupported argument of %s", e.Name.String())
		}
		v, err := eval(ae.Expr, env)
		if err != nil {
			return nil, err
		}
		args = append(args, v)
	}
	switch name := e.Name.Lowered(); {
	case (name == "lower" || name == "upper") && len(args) == 1:
		if args[0] == nil {
			return nil, nil
		}
		if name == "lower" {
			return strings.ToLower(format(args[0])), nil
		}
		return strings.ToUpper(format(args[0])), nil
	case name == "coalesce" || name == "ifnull":
		for _, a := range args {
			if a != nil {
				return a, nil
			}
		}
		return nil, nil
	case name == "charset":
		return "utf8mb4", nil
	}
	return nil, errorf(codeSyntax, "the simulator does not evaluate %s()", e.Name.String())
}

func truthy(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case int64:
		return v != 0
	case nil:
		return false
	}
	return true
}

// compare orders a and b: numbers numerically (a string that is a number
// compares as one, as in MySQL), everything else by its text, case
// insensitively as MySQL's default collation does.
func compare(a, b any) int {
	af, aok := number(a)
	bf, bok := number(b)
	if aok && bok {
		switch {
		case af < bf:
			return -1
		case af > bf:
			return 1
		}
		return 0
	}
	return strings.Compare(strings.ToLower(format(a)), strings.ToLower(format(b)))
}

func number(v any) (float64, bool) {
	switch v := v.(type) {
	case int64:
		return float64(v), true
	case float64:
		return v, true
	case bool:
		if v {
			return 1, true
		}
		return 0, true
	case string:
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil
	}
	return 0, false
}

func format(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		if v {
			return "1"
		}
		return "0"
	case time.Time:
		return v.UTC().Format("2006-01-02 15:04:05.000000")
	}
	return fmt.Sprint(v)
}

func typeCode(v any) string {
	switch v.(type) {
	case int64, bool:
		return "i"
	case float64:
		return "f"
	case time.Time:
		return "t"
	}
	return "s"
}

// sqlResult turns a result into the protocol's.
func (r *result) sqlResult() *sqltypes.Result {
	if r.Fields == nil {
		return &sqltypes.Result{RowsAffected: r.Affected}
	}
	out := &sqltypes.Result{}
	types := make([]querypb.Type, len(r.Fields))
	for i, name := range r.Fields {
		switch r.Types[i] {
		case "i":
			types[i] = sqltypes.Int64
		case "f":
			types[i] = sqltypes.Float64
		case "t":
			types[i] = sqltypes.Datetime
		default:
			types[i] = sqltypes.VarChar
		}
		out.Fields = append(out.Fields, &querypb.Field{Name: name, Type: types[i], Charset: 33})
	}
	for _, row := range r.Rows {
		vals := make([]sqltypes.Value, len(row))
		for i, v := range row {
			if v == nil {
				vals[i] = sqltypes.NULL
				continue
			}
			vals[i] = sqltypes.MakeTrusted(types[i], []byte(*v))
		}
		out.Rows = append(out.Rows, vals)
	}
	return out
}

func firstErr(errs ...*Error) *Error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
