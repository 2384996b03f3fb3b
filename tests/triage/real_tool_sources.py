"""The small broken inputs tests/triage/real_tools.py runs each tool on: two failing tests (or two problems) on
the base, and what the MR's version changes to add one more (`MORE`: the text replaced, its replacement)."""

from __future__ import annotations

PY = "import os\n\n\ndef f(x):\n    y = 1\n    return x\n"
C = 'int main(void) {\n    int x = "s";\n    return y;\n}\n'
C_MORE = ("return y;", "x = z;\n    return y;")
PYTEST = ("def test_parse():\n    assert int('12') == 13\n\n\ndef test_load():\n    assert {}.get('a') == 1\n\n\n"
          "def test_dump():\n    assert str(1) == '1'\n")
SH = '#!/bin/sh\necho $1\ncd $HOME/dir\n'
TYPED = "def a(x):\n    return x\n\n\ndef b(x):\n    return x\n"

UNITTEST = '''import unittest


class ParseTest(unittest.TestCase):
    def test_parse(self):
        self.assertEqual(int("12"), 13)

    def test_load(self):
        self.assertEqual({}.get("a"), 1)

    def test_dump(self):
        self.assertEqual(str(1), "1")
'''
GO_TEST = '''package app

import "testing"

func TestParse(t *testing.T) {
	if got := len("twelve"); got != 13 {
		t.Errorf("parse: got %d, want %d", got, 13)
	}
}

func TestLoad(t *testing.T) {
	t.Run("empty", func(t *testing.T) { t.Fatal("load: no value for key a") })
}

func TestDump(t *testing.T) {
	if got := len("1"); got != 1 {
		t.Errorf("dump: got %d", got)
	}
}
'''
GO_MORE = ('len("1"); got != 1', 'len("1"); got != 2')
GO_BUILD = 'package app\n\nfunc F(x int) int {\n\tvar y int = "s"\n\treturn x + z\n}\n'
GO_BUILD_MORE = ("\treturn x + z", "\tw := q\n\treturn x + z")
CARGO_TOML = '[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n'
CARGO_LIB = '''pub fn parse(s: &str) -> i32 {
    s.parse().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        assert_eq!(parse("12"), 13);
    }

    #[test]
    fn loads() {
        assert_eq!(parse("x"), 1, "load: no value for key a");
    }

    #[test]
    fn dumps() {
        assert_eq!(parse("1"), 1);
    }
}
'''
CARGO_MORE = ('parse("1"), 1', 'parse("1"), 2')
RUST = 'pub fn f(x: i32) -> i32 {\n    let y: i32 = "s";\n    x + z\n}\n'
RUST_MORE = ("    x + z", "    let w = q;\n    x + z")
CMAKE = '''cmake_minimum_required(VERSION 3.16)
project(app LANGUAGES NONE)
enable_testing()
add_test(NAME parses COMMAND sh -c "echo 'parse: got 12, want 13'; exit 1")
add_test(NAME loads COMMAND sh -c "echo 'load: no value for key a'; exit 1")
add_test(NAME dumps COMMAND sh -c "exit 0")
'''
CMAKE_MORE = ('"exit 0"', '"echo \'dump: got 2\'; exit 1"')
JEST = '''const parse = (s) => Number(s);

describe("parser", () => {
  test("parses", () => {
    expect(parse("12")).toBe(13);
  });
  test("loads", () => {
    expect({}.a).toBe(1);
  });
  test("dumps", () => {
    expect(String(1)).toBe("1");
  });
});
'''
MOCHA = '''const assert = require("assert");
const parse = (s) => Number(s);

describe("parser", () => {
  it("parses", () => {
    assert.strictEqual(parse("12"), 13);
  });
  it("loads", () => {
    assert.strictEqual({}.a, 1);
  });
  it("dumps", () => {
    assert.strictEqual(String(1), "1");
  });
});
'''
# node:test runs mocha's describe/it too.
NODE_TEST = 'import { describe, it } from "node:test";\nimport assert from "node:assert";\n' + MOCHA.split("\n", 1)[1]
JS_MORE = ('String(1)).toBe("1")', 'String(1)).toBe("2")')
JS_ASSERT_MORE = ('String(1), "1"', 'String(1), "2"')
TS = 'export function f(x: number): number {\n  const y: number = "s";\n  return x + z;\n}\n'
TS_MORE = ("  return x + z;", "  const w: string = 1;\n  return x + z;")
PERL = '''use strict;
use warnings;
use Test::More tests => 3;

is(int("12"), 13, 'parses');
is({}->{a}, 1, 'loads');
is("" . 1, "1", 'dumps');
'''
PERL_MORE = ('"" . 1, "1"', '"" . 1, "2"')
PHP = '''<?php
use PHPUnit\\Framework\\TestCase;

final class AppTest extends TestCase
{
    public function testParses(): void
    {
        $this->assertSame(13, intval("12"));
    }

    public function testLoads(): void
    {
        $this->assertSame(1, [] ["a"] ?? null);
    }

    public function testDumps(): void
    {
        $this->assertSame("1", strval(1));
    }
}
'''
PHP_MORE = ('assertSame("1"', 'assertSame("2"')
RSPEC = '''RSpec.describe "parser" do
  it "parses" do
    expect(Integer("12")).to eq(13)
  end

  it "loads" do
    expect({}["a"]).to eq(1)
  end

  it "dumps" do
    expect(1.to_s).to eq("1")
  end
end
'''
RSPEC_MORE = ('eq("1")', 'eq("2")')
JUNIT5 = '''import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HashMap;
import org.junit.jupiter.api.Test;

class AppTest {
    @Test
    void parses() {
        assertEquals(13, Integer.parseInt("12"));
    }

    @Test
    void loads() {
        assertEquals(Integer.valueOf(1), new HashMap<String, Integer>().get("a"));
    }

    @Test
    void dumps() {
        assertEquals("1", String.valueOf(1));
    }
}
'''
JUNIT4 = (JUNIT5.replace("org.junit.jupiter.api.Assertions", "org.junit.Assert")
          .replace("org.junit.jupiter.api.Test", "org.junit.Test").replace("class AppTest", "public class AppTest")
          .replace("    void ", "    public void "))
JAVA_MORE = ('assertEquals("1"', 'assertEquals("2"')
JAVAC = 'class App {\n    int f(int x) {\n        int y = "s";\n        return x + z;\n    }\n}\n'
JAVAC_MORE = ("        return x + z;", "        String w = 1;\n        return x + z;")
ESLINT = 'export function f(x) {\n  const y = 1;\n  return x + z;\n}\n'
ESLINT_MORE = ("  return x + z;", "  const w = 2;\n  return x + z;")
ESLINT_CONFIG = 'export default [{ rules: { "no-unused-vars": "error", "no-undef": "error" } }];\n'
