"""``ssl.principal.mapping.rules``: from a client certificate's subject to a principal name, as
Kafka's SslPrincipalMapper does it (pure).

Rules are tried in order; the first that applies names the principal::

    RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L,RULE:^CN=(.*?),.*$/$1/,DEFAULT

``RULE:pattern/replacement/[L|U]`` applies when the pattern matches the whole distinguished name;
the DN's matches are then replaced (``$1`` is a group) and the result optionally lower- or
upper-cased. ``DEFAULT`` applies always and keeps the whole DN. No applicable rule is an error
(the broker refuses the connection). The DN is in RFC 2253/4514 form, most specific first, as
Java's X500Principal prints it: ``CN=alice,OU=eng,O=Acme,C=US``.
"""

from __future__ import annotations

import re

__all__ = ["PrincipalMapper", "NoMatchingRule", "DEFAULT_RULES"]

DEFAULT_RULES = "DEFAULT"

# Kafka's grammar, unchanged: a rule is DEFAULT, RULE:<pattern>/<replacement>/[LU], or empty
_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)")
_PARSER = re.compile(_RULE)


class NoMatchingRule(ValueError):
    """No rule of ssl.principal.mapping.rules applies to a certificate's DN."""


class _Rule:
    def __init__(self, pattern: str | None = None, replacement: str = "",
                 lower: bool = False, upper: bool = False):
        self.is_default = pattern is None
        self.source = pattern
        self.pattern = re.compile(pattern) if pattern is not None else None
        self.replacement = replacement
        self.lower = lower
        self.upper = upper

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if not self.pattern.fullmatch(dn):
            return None
        groups = self.pattern.groups
        result = self.pattern.sub(lambda m: _expand(self.replacement, m, groups), dn)
        if self.lower:
            return result.lower()
        if self.upper:
            return result.upper()
        return result

    def __repr__(self) -> str:
        if self.is_default:
            return "DEFAULT"
        case = "L" if self.lower else ("U" if self.upper else "")
        return f"RULE:{self.source}/{self.replacement}/{case}"


def _expand(replacement: str, match: re.Match, groups: int) -> str:
    """Java's replacement syntax: ``$n`` is group n, ``\\x`` is x. A ``$n`` beyond the groups
    drops its last digits while it is still too big and at least 10, then stays literal if it
    is (Kafka's escapeLiteralBackReferences)."""
    out, i = [], 0
    while i < len(replacement):
        ch = replacement[i]
        if ch == "\\" and i + 1 < len(replacement):
            out.append(replacement[i + 1])
            i += 2
        elif ch == "$" and i + 1 < len(replacement) and replacement[i + 1].isdigit():
            j = i + 1
            while j < len(replacement) and replacement[j].isdigit():
                j += 1
            digits = replacement[i + 1:j]
            number = int(digits)
            if digits.startswith("0") or groups == 0:
                number = int(digits[0])          # $0..., or no groups: Java reads one digit
                j = i + 2
            else:
                while number > groups and number >= 10:
                    number //= 10
                    j -= 1
            if number > groups:
                out.append(replacement[i:j])      # not a group: literal
            else:
                out.append(match.group(number) or "")
            i = j
        else:
            out.append(ch)
            i += 1
    return "".join(out)


class PrincipalMapper:
    def __init__(self, rules: str | None = None):
        text = DEFAULT_RULES if rules is None else rules
        self.rules = [_parse(rule) for rule in _split(text)]
        self.rules = [rule for rule in self.rules if rule is not None]

    def name(self, distinguished_name: str) -> str:
        for rule in self.rules:
            principal = rule.apply(distinguished_name)
            if principal is not None:
                return principal
        raise NoMatchingRule(f"no rule of ssl.principal.mapping.rules applies to "
                             f"{distinguished_name!r} (rules {self.rules}); end the rules with "
                             "DEFAULT to keep the whole DN")

    def __repr__(self) -> str:
        return f"PrincipalMapper(rules={self.rules})"


def _split(text: str) -> list[str]:
    return [m.group(1) for m in _SPLITTER.finditer(text.strip())]


def _parse(rule: str) -> _Rule | None:
    match = _PARSER.match(rule)
    if match is None or match.end() != len(rule):
        raise ValueError(f"invalid rule in ssl.principal.mapping.rules: {rule!r}; write "
                         "RULE:<regex>/<replacement>/[L|U] or DEFAULT")
    if match.group(1) is not None:
        return _Rule()
    if match.group(2) is not None:
        try:
            return _Rule(match.group(2), match.group(4), match.group(6) == "L",
                         match.group(6) == "U")
        except re.error as exc:
            raise ValueError(f"invalid regex in ssl.principal.mapping.rules rule {rule!r}: "
                             f"{exc}") from None
    return None          # an empty rule is ignored
