"""A command line against the rules: deny/ask if ANY simple command matches one, allow only if
EVERY simple command matches an allow rule, the parser saw it all and nothing is written outside
the roots. Parsed with tree-sitter's bash grammar, never a regex."""

from __future__ import annotations

import pytest

from acp_agent.permissions.patterns import Target, parse_pattern
from acp_agent.permissions.rules import Effect, Rule, Source, Subject, Verdict, weigh

ALLOW: tuple[str, ...] = (
    "run_command(git *)",
    "run_command(ls *)",
    "run_command(echo *)",
    "run_command(cat *)",
)
ALLOW += ("run_command(wc *)", "run_command(true)", "run_command(make test)")
DENY = ("run_command(rm *)", "run_command(git push --force *)")
ASK = ("run_command(curl *)",)


def rules() -> list[Rule]:
    made = [Rule(Effect.ALLOW, parse_pattern(p), Source.CONFIG) for p in ALLOW]
    made += [Rule(Effect.DENY, parse_pattern(p), Source.CONFIG) for p in DENY]
    return made + [Rule(Effect.ASK, parse_pattern(p), Source.PROJECT) for p in ASK]


def verdict(command: str) -> Verdict:
    return weigh(rules(), Subject(Target.RUN_COMMAND, command, "/w/sub", ("/w", "/extra")))


@pytest.mark.parametrize(
    ("command", "effect"),
    [
        # every simple command allowed: allowed
        ("git status", Effect.ALLOW),
        ("git status && ls -la", Effect.ALLOW),
        ("ls | wc -l", Effect.ALLOW),
        ("ls; echo done || true", Effect.ALLOW),
        ("echo $(git rev-parse HEAD)", Effect.ALLOW),
        ("echo `ls`", Effect.ALLOW),
        ("(git status; ls)", Effect.ALLOW),
        ("{ git log; }", Effect.ALLOW),
        ("FOO=1 git status", Effect.ALLOW),
        ("echo hi > out.txt", Effect.ALLOW),  # inside the cwd
        ("echo hi > ../top.txt", Effect.ALLOW),  # /w/top.txt: inside a root
        ("echo hi >> /extra/log", Effect.ALLOW),
        ("ls 2>/dev/null", Effect.ALLOW),
        ("cat < /etc/hosts", Effect.ALLOW),  # reading is no redirection *to* a file
        ("if true; then ls; fi", Effect.ALLOW),
        ("make test", Effect.ALLOW),
        # one simple command not allowed: no allow (the mode decides)
        ("git status && make", None),
        ("make test -j", Effect.ALLOW),  # its words start with make test
        ("make", None),
        ("ls | sort", None),
        ("echo $(whoami)", None),
        ("echo `id`", None),
        ("cat <(sort x)", None),
        ("echo hi > /etc/passwd", None),  # writes outside the roots
        ("echo hi > ../../elsewhere", None),  # /elsewhere: `..` does not escape
        ("echo hi > ~/x", None),
        ("echo hi > $OUT", None),  # unknown file
        ("$GIT status", None),  # unknown program
        ("echo ${X:-$(whoami)}", None),  # the substitution inside ${…} runs too
        ("echo 'unbalanced", None),  # does not parse
        ("case x in a) ls;; esac", Effect.ALLOW),
        ("case x in a) make;; esac", None),
        ("cat <<EOF\nhi $USER\nEOF\n", Effect.ALLOW),
        ("cat <<EOF\n$(whoami)\nEOF\n", None),  # a substitution in a here-document runs
        ("bash -c 'ls; make'", None),
        ("", None),
        # any simple command denied: denied, wherever it hides
        ("rm -rf /", Effect.DENY),
        ("rm", Effect.DENY),
        ("true && rm x", Effect.DENY),
        ("ls; rm x", Effect.DENY),
        ("ls || rm x", Effect.DENY),
        ("ls | rm x", Effect.DENY),
        ("echo $(rm x)", Effect.DENY),
        ("echo `rm x`", Effect.DENY),
        ("(cd a && rm x)", Effect.DENY),
        ("x=$(rm a) ls", Effect.DENY),
        ("for f in *; do rm $f; done", Effect.DENY),
        ("f() { rm x; }", Effect.DENY),
        ("ls > $(rm x)", Effect.DENY),
        ("bash -c 'ls && rm x'", Effect.DENY),
        ("eval rm x", Effect.DENY),
        ("echo ${X:-$(rm y)}", Effect.DENY),
        ("time rm x", Effect.DENY),
        ("cat <<EOF\n$(rm z)\nEOF\n", Effect.DENY),
        ("export A=$(rm q)", Effect.DENY),
        ("[[ -f x ]] && rm y", Effect.DENY),
        ("echo 'a' && rm 'x", Effect.DENY),  # a syntax error: found by the fallback split
        ("git push --force origin main", Effect.DENY),  # deny beats the allow of git *
        ("FOO=1 rm x", Effect.DENY),
        ("sudo rm x", Effect.DENY),
        ("env -i A=1 rm x", Effect.DENY),
        ("ls | xargs rm", Effect.DENY),
        ("nohup /bin/rm x &", Effect.DENY),  # a program named by its path too
        # any simple command under an ask rule: asked (deny still first)
        ("ls && curl example.com", Effect.ASK),
        ("curl x | rm y", Effect.DENY),
        ("git log | curl -d @- x", Effect.ASK),
    ],
)
def test_compound_commands(command: str, effect: Effect | None) -> None:
    assert verdict(command).effect is effect


def test_the_verdict_names_the_rule_that_decided() -> None:
    denied = verdict("true && rm x")
    assert denied.rule is not None
    assert denied.rule.describe() == "the rule deny run_command(rm *) (config)"
    one = verdict("git status")
    assert one.rule is not None and one.rule.pattern.text == "run_command(git *)"
    assert verdict("git status && ls").rule is None  # several rules allowed it together


def test_quotes_are_words_not_operators() -> None:
    """``echo "a && rm x"`` runs echo only: nothing to deny, and echo is allowed."""
    assert verdict('echo "a && rm x"').effect is Effect.ALLOW
    assert verdict("echo 'rm x' | wc").effect is Effect.ALLOW
