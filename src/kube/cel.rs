//! The Common Expression Language as the CRDs' `x-kubernetes-validations` rules write it: a
//! parser for CEL's grammar (literals, `self` and the other identifiers, field selection,
//! indexing, calls and methods, the macros `has`, `all`, `exists`, `exists_one`, `filter` and
//! `map`, lists and maps, the operators with CEL's precedence, `? :`). Evaluated by
//! [`super::cel_eval`]. Pure.

/// A parsed expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(String),
    Ident(String),
    /// `operand.field`; `test` for `has(operand.field)`.
    Select {
        operand: Box<Expr>,
        field: String,
        test: bool,
    },
    Index(Box<Expr>, Box<Expr>),
    /// `function(args)` or `target.function(args)`.
    Call {
        target: Option<Box<Expr>>,
        function: String,
        args: Vec<Expr>,
    },
    List(Vec<Expr>),
    Map(Vec<(Expr, Expr)>),
    Not(Box<Expr>),
    Negate(Box<Expr>),
    Binary(Op, Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `range.all(var, body)` and the other comprehension macros.
    Macro {
        kind: MacroKind,
        range: Box<Expr>,
        var: String,
        body: Box<Expr>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MacroKind {
    All,
    Exists,
    ExistsOne,
    Filter,
    Map,
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(String),
    Ident(String),
    Punct(&'static str),
}

const PUNCTS: &[&str] = &[
    "||", "&&", "==", "!=", "<=", ">=", "<", ">", "!", "?", ":", ".", ",", "(", ")", "[", "]", "{",
    "}", "+", "-", "*", "/", "%",
];

/// Parses a rule; the error says what CEL's grammar (as written here) cannot read.
pub fn parse(text: &str) -> Result<Expr, String> {
    let tokens = lex(text)?;
    let mut parser = Parser { tokens, at: 0 };
    let expr = parser.expr()?;
    if parser.at != parser.tokens.len() {
        return Err(format!("unexpected {:?}", parser.tokens[parser.at]));
    }
    Ok(expr)
}

fn lex(text: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            i = number(&chars, i, &mut out)?;
        } else if c == '"' || c == '\'' {
            i = string(&chars, i, false, &mut out)?;
        } else if (c == 'r' || c == 'R') && matches!(chars.get(i + 1), Some('"' | '\'')) {
            i = string(&chars, i + 1, true, &mut out)?;
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token::Ident(chars[start..i].iter().collect()));
        } else {
            let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
            let Some(p) = PUNCTS.iter().find(|p| rest.starts_with(**p)) else {
                return Err(format!("unexpected character {c:?}"));
            };
            out.push(Token::Punct(p));
            i += p.len();
        }
    }
    Ok(out)
}

fn number(chars: &[char], start: usize, out: &mut Vec<Token>) -> Result<usize, String> {
    let mut i = start;
    let hex = chars[i] == '0' && matches!(chars.get(i + 1), Some('x' | 'X'));
    if hex {
        i += 2;
        while i < chars.len() && chars[i].is_ascii_hexdigit() {
            i += 1;
        }
    } else {
        while i < chars.len() && chars[i].is_ascii_digit() {
            i += 1;
        }
    }
    let mut double = false;
    if !hex && chars.get(i) == Some(&'.') && chars.get(i + 1).is_some_and(char::is_ascii_digit) {
        double = true;
        i += 1;
        while i < chars.len() && chars[i].is_ascii_digit() {
            i += 1;
        }
    }
    if !hex && matches!(chars.get(i), Some('e' | 'E')) {
        double = true;
        i += 1;
        if matches!(chars.get(i), Some('+' | '-')) {
            i += 1;
        }
        while i < chars.len() && chars[i].is_ascii_digit() {
            i += 1;
        }
    }
    let text: String = chars[start..i].iter().collect();
    let bad = || format!("bad number {text:?}");
    if double {
        out.push(Token::Double(text.parse().map_err(|_| bad())?));
        return Ok(i);
    }
    let (digits, radix) = match text.strip_prefix("0x").or(text.strip_prefix("0X")) {
        Some(h) => (h.to_string(), 16),
        None => (text.clone(), 10),
    };
    if matches!(chars.get(i), Some('u' | 'U')) {
        out.push(Token::Uint(
            u64::from_str_radix(&digits, radix).map_err(|_| bad())?,
        ));
        return Ok(i + 1);
    }
    // A literal one above i64::MAX is only valid negated; CEL's rules here never write one.
    out.push(Token::Int(
        i64::from_str_radix(&digits, radix).map_err(|_| bad())?,
    ));
    Ok(i)
}

/// A quoted string from `chars[start]` (its quote), triple-quoted or not, raw or not.
fn string(chars: &[char], start: usize, raw: bool, out: &mut Vec<Token>) -> Result<usize, String> {
    let quote = chars[start];
    let triple = chars.get(start + 1) == Some(&quote) && chars.get(start + 2) == Some(&quote);
    let mut i = start + if triple { 3 } else { 1 };
    let mut s = String::new();
    loop {
        let Some(&c) = chars.get(i) else {
            return Err("unterminated string".into());
        };
        if triple {
            if c == quote && chars.get(i + 1) == Some(&quote) && chars.get(i + 2) == Some(&quote) {
                i += 3;
                break;
            }
        } else if c == quote {
            i += 1;
            break;
        } else if c == '\n' {
            return Err("newline in a string".into());
        }
        if c == '\\' && !raw {
            i = escape(chars, i + 1, &mut s)?;
            continue;
        }
        s.push(c);
        i += 1;
    }
    out.push(Token::Str(s));
    Ok(i)
}

/// One escape sequence after its backslash: the index after it.
fn escape(chars: &[char], i: usize, s: &mut String) -> Result<usize, String> {
    let c = *chars.get(i).ok_or("unterminated escape")?;
    let simple = match c {
        'a' => Some('\u{7}'),
        'b' => Some('\u{8}'),
        'f' => Some('\u{c}'),
        'n' => Some('\n'),
        'r' => Some('\r'),
        't' => Some('\t'),
        'v' => Some('\u{b}'),
        '\\' | '\'' | '"' | '`' | '?' => Some(c),
        _ => None,
    };
    if let Some(e) = simple {
        s.push(e);
        return Ok(i + 1);
    }
    let (len, radix, from) = match c {
        'x' | 'X' => (2, 16, i + 1),
        'u' => (4, 16, i + 1),
        'U' => (8, 16, i + 1),
        '0'..='3' => (3, 8, i),
        _ => return Err(format!("bad escape \\{c}")),
    };
    let digits: String = chars
        .get(from..from + len)
        .ok_or("short escape")?
        .iter()
        .collect();
    let code = u32::from_str_radix(&digits, radix).map_err(|_| "bad escape")?;
    s.push(char::from_u32(code).ok_or("bad escape")?);
    Ok(from + len)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn eat(&mut self, p: &str) -> bool {
        if matches!(self.peek(), Some(Token::Punct(q)) if *q == p) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, p: &str) -> Result<(), String> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(format!("expected {p:?} at {:?}", self.peek()))
        }
    }

    fn expr(&mut self) -> Result<Expr, String> {
        let cond = self.or()?;
        if self.eat("?") {
            let yes = self.or()?;
            self.expect(":")?;
            let no = self.expr()?;
            return Ok(Expr::Cond(Box::new(cond), Box::new(yes), Box::new(no)));
        }
        Ok(cond)
    }

    fn or(&mut self) -> Result<Expr, String> {
        let mut left = self.and()?;
        while self.eat("||") {
            left = Expr::Binary(Op::Or, Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, String> {
        let mut left = self.relation()?;
        while self.eat("&&") {
            left = Expr::Binary(Op::And, Box::new(left), Box::new(self.relation()?));
        }
        Ok(left)
    }

    fn relation(&mut self) -> Result<Expr, String> {
        let mut left = self.addition()?;
        loop {
            let op = match self.peek() {
                Some(Token::Punct("==")) => Op::Eq,
                Some(Token::Punct("!=")) => Op::Ne,
                Some(Token::Punct("<")) => Op::Lt,
                Some(Token::Punct("<=")) => Op::Le,
                Some(Token::Punct(">")) => Op::Gt,
                Some(Token::Punct(">=")) => Op::Ge,
                Some(Token::Ident(w)) if w == "in" => Op::In,
                _ => return Ok(left),
            };
            self.at += 1;
            left = Expr::Binary(op, Box::new(left), Box::new(self.addition()?));
        }
    }

    fn addition(&mut self) -> Result<Expr, String> {
        let mut left = self.multiplication()?;
        loop {
            let op = if self.eat("+") {
                Op::Add
            } else if self.eat("-") {
                Op::Sub
            } else {
                return Ok(left);
            };
            left = Expr::Binary(op, Box::new(left), Box::new(self.multiplication()?));
        }
    }

    fn multiplication(&mut self) -> Result<Expr, String> {
        let mut left = self.unary()?;
        loop {
            let op = if self.eat("*") {
                Op::Mul
            } else if self.eat("/") {
                Op::Div
            } else if self.eat("%") {
                Op::Rem
            } else {
                return Ok(left);
            };
            left = Expr::Binary(op, Box::new(left), Box::new(self.unary()?));
        }
    }

    fn unary(&mut self) -> Result<Expr, String> {
        if self.eat("!") {
            return Ok(Expr::Not(Box::new(self.unary()?)));
        }
        if self.eat("-") {
            // A negative literal is one number (`-9223372036854775808` included).
            return Ok(match self.unary()? {
                Expr::Int(n) => Expr::Int(-n),
                Expr::Double(d) => Expr::Double(-d),
                other => Expr::Negate(Box::new(other)),
            });
        }
        self.member()
    }

    fn member(&mut self) -> Result<Expr, String> {
        let mut expr = self.primary()?;
        loop {
            if self.eat(".") {
                let field = self.ident()?;
                if self.eat("(") {
                    let args = self.args(")")?;
                    expr = method(expr, field, args)?;
                } else {
                    expr = Expr::Select {
                        operand: Box::new(expr),
                        field,
                        test: false,
                    };
                }
            } else if self.eat("[") {
                let index = self.expr()?;
                self.expect("]")?;
                expr = Expr::Index(Box::new(expr), Box::new(index));
            } else {
                return Ok(expr);
            }
        }
    }

    fn ident(&mut self) -> Result<String, String> {
        match self.peek().cloned() {
            Some(Token::Ident(name)) => {
                self.at += 1;
                Ok(name)
            }
            other => Err(format!("expected a name at {other:?}")),
        }
    }

    fn args(&mut self, close: &str) -> Result<Vec<Expr>, String> {
        let mut args = Vec::new();
        if self.eat(close) {
            return Ok(args);
        }
        loop {
            args.push(self.expr()?);
            if self.eat(close) {
                return Ok(args);
            }
            self.expect(",")?;
            if self.eat(close) {
                return Ok(args);
            }
        }
    }

    fn primary(&mut self) -> Result<Expr, String> {
        let token = self.peek().cloned().ok_or("unexpected end")?;
        self.at += 1;
        Ok(match token {
            Token::Int(n) => Expr::Int(n),
            Token::Uint(n) => Expr::Uint(n),
            Token::Double(d) => Expr::Double(d),
            Token::Str(s) => Expr::Str(s),
            Token::Ident(name) => match name.as_str() {
                "true" => Expr::Bool(true),
                "false" => Expr::Bool(false),
                "null" => Expr::Null,
                _ if self.eat("(") => {
                    let args = self.args(")")?;
                    if name == "has" {
                        return match args.as_slice() {
                            [Expr::Select { operand, field, .. }] => Ok(Expr::Select {
                                operand: operand.clone(),
                                field: field.clone(),
                                test: true,
                            }),
                            _ => Err("has() needs a field selection".into()),
                        };
                    }
                    Expr::Call {
                        target: None,
                        function: name,
                        args,
                    }
                }
                _ => Expr::Ident(name),
            },
            Token::Punct("(") => {
                let inner = self.expr()?;
                self.expect(")")?;
                inner
            }
            Token::Punct("[") => Expr::List(self.args("]")?),
            Token::Punct("{") => {
                let mut entries = Vec::new();
                if !self.eat("}") {
                    loop {
                        let key = self.expr()?;
                        self.expect(":")?;
                        entries.push((key, self.expr()?));
                        if self.eat("}") {
                            break;
                        }
                        self.expect(",")?;
                        if self.eat("}") {
                            break;
                        }
                    }
                }
                Expr::Map(entries)
            }
            other => return Err(format!("unexpected {other:?}")),
        })
    }
}

/// `target.function(args)`: a macro when it is one, else a call.
fn method(target: Expr, function: String, args: Vec<Expr>) -> Result<Expr, String> {
    let kind = match function.as_str() {
        "all" => Some(MacroKind::All),
        "exists" => Some(MacroKind::Exists),
        "exists_one" | "existsOne" => Some(MacroKind::ExistsOne),
        "filter" => Some(MacroKind::Filter),
        "map" => Some(MacroKind::Map),
        _ => None,
    };
    if let Some(kind) = kind {
        let mut args = args.into_iter();
        return match (args.next(), args.next(), args.next()) {
            (Some(Expr::Ident(var)), Some(body), None) => Ok(Expr::Macro {
                kind,
                range: Box::new(target),
                var,
                body: Box::new(body),
            }),
            _ => Err(format!("{function}() takes a name and an expression")),
        };
    }
    Ok(Expr::Call {
        target: Some(Box::new(target)),
        function,
        args,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_and_literals() {
        let e = parse("a || b && !c ? 1 : -2").unwrap();
        let Expr::Cond(cond, yes, no) = e else {
            panic!("{e:?}")
        };
        assert!(matches!(*cond, Expr::Binary(Op::Or, _, _)));
        assert_eq!(*yes, Expr::Int(1));
        assert_eq!(*no, Expr::Int(-2));
        assert_eq!(
            parse(r#"r"""a\.b""" + '\x41\n'"#).unwrap(),
            Expr::Binary(
                Op::Add,
                Box::new(Expr::Str("a\\.b".into())),
                Box::new(Expr::Str("A\n".into()))
            )
        );
        assert_eq!(
            parse("1 + 2 == 3 in [3]").unwrap(),
            Expr::Binary(
                Op::In,
                Box::new(Expr::Binary(
                    Op::Eq,
                    Box::new(Expr::Binary(
                        Op::Add,
                        Box::new(Expr::Int(1)),
                        Box::new(Expr::Int(2))
                    )),
                    Box::new(Expr::Int(3))
                )),
                Box::new(Expr::List(vec![Expr::Int(3)]))
            )
        );
    }

    #[test]
    fn macros_has_and_methods() {
        let e = parse("self.all(k, has(k.x) && k.y.startsWith('a'))").unwrap();
        let Expr::Macro {
            kind: MacroKind::All,
            var,
            body,
            ..
        } = e
        else {
            panic!()
        };
        assert_eq!(var, "k");
        let Expr::Binary(Op::And, has, call) = *body else {
            panic!()
        };
        assert!(matches!(*has, Expr::Select { test: true, .. }));
        assert!(matches!(*call, Expr::Call { function, .. } if function == "startsWith"));
        assert!(parse("has(x)").is_err());
        assert!(parse("a b").is_err());
        assert!(parse("'open").is_err());
        assert_eq!(parse("{}").unwrap(), Expr::Map(vec![]));
    }
}
