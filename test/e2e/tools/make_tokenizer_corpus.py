#!/usr/bin/env python3
"""Writes the tokenizer test corpus, test/e2e/data/tokenizer_corpus.json: a JSON
list of strings, the same every run (hand-written cases plus seeded random mixes).

  make_tokenizer_corpus.py [--out FILE] [--check]

Categories: English prose (with contractions), code, digits and long numbers,
whitespace runs (spaces, tabs, newlines, CR), CJK (Chinese, Japanese, Korean),
emoji (ZWJ sequences, flags, skin tones, keycaps), accented Latin (precomposed and
decomposed), other scripts, special tokens embedded in text (<|im_start|>, <s>,
...), edge cases, and random mixes of all of these. U+0085 and U+FEFF are left out:
JavaScript's \\s (the Hugging Face oracle runs in node) disagrees with Unicode's
White_Space on exactly those two.
"""
import argparse
import json
import os
import random
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "..", "data", "tokenizer_corpus.json")

PROSE = [
    "Once upon a time, there was a little girl named Lily.",
    "The quick brown fox jumps over the lazy dog.",
    "Hello, world!",
    "It's a beautiful day, isn't it? I'd say so; we'll see.",
    "I'M SHOUTING BECAUSE THEY'RE LATE AND WE'VE WAITED.",
    "She said: \"Don't go there!\" -- and he didn't.",
    "'Tis the season; 'twas the night before Christmas.",
    "Mr. O'Neil's dog's bone was under the neighbours' porch.",
    "You're right, aren't you'd, shouldn't've, y'all'd've.",
    "What's up?! Nothing... just (parenthetical) [bracketed] {braced} text.",
    "An em—dash, an en–dash, and a hyphen-minus.",
    "Prices: $5.99, \u20ac3,50, \u00a3100, \u00a5500 and 50% off!",
    "Email me at someone@example.com or visit https://example.org/path?q=1&r=2#frag.",
    "The year 1999 ended; 2000 began. In 2024, 3 cats ate 12 fish.",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.",
    "A sentence ending with spaces.   ",
    "   A sentence starting with spaces.",
    "Multiple   spaces    between     words.",
    "First line.\nSecond line.\n\nFourth line after a blank one.",
    "Windows line endings\r\nare here\r\n",
    "Tabs\tbetween\twords\tand\t\tdouble\ttabs.",
    "ALL CAPS TITLE: THE END",
    "camelCase snake_case kebab-case PascalCase SCREAMING_SNAKE",
    "The U.S.A. and the U.K. signed the treaty in Washington, D.C.",
    "Q&A: who? what? when? where? why? how?",
    "Hmm... well... okay!!! Really??? No way!?",
    "#hashtag @mention ~tilde ^caret `backtick` |pipe| \\backslash/",
    "It was the best of times, it was the worst of times, it was the age of wisdom.",
    "Is this the real life? Is this just fantasy?",
    "He said 'hello' and she said \u2018hi\u2019 and they said \u201cbye\u201d.",
    "one two three four five six seven eight nine ten eleven twelve",
    "The cat sat on the mat.\nIt was happy.",
    "h\u00e9llo \u65e5\u672c\u8a9e \U0001f642",
    "  two  spaces",
]

CODE = [
    "def f(x):\n    return x * 2\n",
    "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}",
    "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); return 0; }",
    "const x = () => { console.log(`template ${value}`); };",
    "if x == 1:\n        pass\n    elif x != 2:\n        raise ValueError('bad')",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;",
    "{\"key\": [1, 2.5, -3e10, true, null], \"nested\": {\"a\": \"b\"}}",
    "<html><body><p class=\"x\">Hello &amp; goodbye</p></body></html>",
    "$ ls -la | grep '\\.py$' > out.txt 2>&1 && echo done",
    "x+=1;y-=2;z*=3;w/=4;a%=5;b**=6;c//=7",
    "fn main() -> Result<(), Box<dyn Error>> { Ok(()) }",
    "    indented with four spaces\n        and eight",
    "\t\tdef nested():\n\t\t\treturn None",
    "arr[i][j] = (arr[i-1][j] + arr[i][j-1]) >> 1;",
    "// comment\n/* block\n   comment */\n# hash comment",
    "a=b==c!=d<=e>=f&&g||h",
    "lambda *args, **kwargs: (args, kwargs)",
    "import numpy as np\nnp.zeros((3, 4), dtype=np.float32)",
    "std::vector<std::pair<int, std::string>> v{{1, \"one\"}};",
    "@decorator\nclass Foo(Bar, metaclass=Meta):\n    __slots__ = ()",
    "print(f\"{name!r:>10} {value:.3f}\")",
    "0x7FFF_FFFF 0b1010 0o755 1_000_000 3.14e-10",
    "git commit -m \"Fix bug #123\" --amend",
    "    \n    \n",
    "}}}]]])))",
    "if(a){b();}else{c();}",
]

NUMBERS = [
    "0", "7", "42", "123", "1234", "12345", "123456", "1234567",
    "12345678901234567890",
    "3.14159265358979323846264338327950288419716939937510",
    "1,000,000", "1.000.000,50", "-273.15", "+1 (555) 123-4567", "2024-01-31T23:59:59Z",
    "9999999999999999999999999999999999999999",
    "The answer is 42, not 41 or 43.",
    "1st 2nd 3rd 4th 21st 100th",
    "v1.2.3-rc.4+build.5",
    "\u0661\u0662\u0663 \u0967\u0968\u0969 \u2460\u2461\u2462 \u00bd \u2153 \u2167",
    "\uff11\uff12\uff13\uff14\uff15",
    "x1y22z333w4444",
    "3x+2y=10",
    "00000000",
    "192.168.0.1:8080",
]

WHITESPACE = [
    "", " ", "  ", "   ", "          ", "\t", "\t\t", "\n", "\n\n", "\n\n\n\n",
    "\r\n", "\r\n\r\n", " \n", "\n ", " \n \n ", "a  b", "a   b", "a\tb", "a\t\tb",
    "a\n\nb", "a \n b", "a\r\nb", "\t \t \t", "  \n\t  x", "x  \n  ", "end with newline\n",
    "\u00a0non-breaking\u00a0spaces\u00a0", "ideographic\u3000space", "em\u2003space thin\u2009space",
    "line\u2028separator", " leading single", "trailing single ", "\u000bvertical tab\u000c",
]

CJK = [
    "\u4f60\u597d\uff0c\u4e16\u754c\uff01",
    "\u6211\u7231\u5317\u4eac\u5929\u5b89\u95e8\u3002",
    "\u4eca\u5929\u5929\u6c14\u5f88\u597d\uff0c\u6211\u4eec\u53bb\u516c\u56ed\u6563\u6b65\u5427\u3002",
    "\u65e5\u672c\u8a9e\u306e\u6587\u7ae0\u3067\u3059\u3002",
    "\u3072\u3089\u304c\u306a\u3068\u30ab\u30bf\u30ab\u30ca\u3068\u6f22\u5b57",
    "\u6771\u4eac\u30bf\u30ef\u30fc\u306f333\u30e1\u30fc\u30c8\u30eb\u3067\u3059",
    "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8\uc785\ub2c8\ub2e4.",
    "\uc548\ub155\ud558\uc138\uc694, \uc138\uacc4!",
    "Mixed \u4e2d\u6587 and English \u6df7\u5408",
    "\u300c\u5f15\u7528\u300d\u3010\u62ec\u53f7\u3011\uff08\u5168\u89d2\uff09",
    "\u4e2d\u6587\u6570\u5b57\u4e00\u4e8c\u4e09\u548c123",
    "\u7e41\u9ad4\u4e2d\u6587\u8207\u7b80\u4f53\u4e2d\u6587",
    "\u3053\u3093\u306b\u3061\u306f\u3001\u5143\u6c17\u3067\u3059\u304b\uff1f",
    "\uff21\uff22\uff23\uff41\uff42\uff43",
    "\u6f22\u5b57\u3000\u5168\u89d2\u30b9\u30da\u30fc\u30b9",
    "\U00020000\U0002a6d6 rare CJK extension B",
    "\u1100\u1161\u11a8 conjoining jamo",
]

EMOJI = [
    "\U0001f600", "\U0001f44b Hello", "I \u2764\ufe0f you", "\U0001f44d\U0001f3fd",
    "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466",
    "\U0001f469\u200d\U0001f4bb coding", "\U0001f3f3\ufe0f\u200d\U0001f308",
    "\U0001f1ef\U0001f1f5\U0001f1fa\U0001f1f8\U0001f1e9\U0001f1ea", "1\ufe0f\u20e3 2\ufe0f\u20e3",
    "\U0001f680\U0001f680\U0001f680", "emoji\U0001f389in\U0001f38amiddle",
    "\u2615 \u26a1 \u2728 \u2b50", "\U0001f9d1\U0001f3ff\u200d\U0001f9af",
    "\U0001f4a9", "Good job! \U0001f44f\U0001f44f",
    "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",
    "\u263a\ufe0e text vs \u263a\ufe0f emoji",
]

ACCENTED = [
    "caf\u00e9", "na\u00efve r\u00e9sum\u00e9", "\u00c5ngstr\u00f6m", "Stra\u00dfe",
    "se\u00f1or ni\u00f1o", "\u0141\u00f3d\u017a", "Ti\u1ebfng Vi\u1ec7t c\u00f3 d\u1ea5u",
    "cr\u00e8me br\u00fbl\u00e9e", "\u00c9COLE \u00c0 PARIS", "\u0159\u00ed\u0161 \u017elu\u0165ou\u010dk\u00fd k\u016f\u0148",
    "S\u00e3o Paulo, Bras\u00edl", "\u00deorn \u00f0 \u00e6 \u00f8", "d\u00e9j\u00e0 vu",
    "cafe\u0301",                      # decomposed e + combining acute
    "nai\u0308ve",                     # decomposed i + diaeresis
    "A\u030angstro\u0308m",            # decomposed A-ring and o-umlaut
    "\u1e0b\u0323",                    # canonical reordering case
    "\u212b \u2126 \u212a",            # singletons: Angstrom sign, Ohm, Kelvin
    "Z\u0351\u036b\u0343a\u0306l\u0347g\u0350o",  # stacked marks
]

SCRIPTS = [
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440!",
    "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac \u03ba\u03b5\u03af\u03bc\u03b5\u03bd\u03bf",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd",
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",
    "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e0a\u0e32\u0e27\u0e42\u0e25\u0e01",
    "\u10d2\u10d0\u10db\u10d0\u10e0\u10ef\u10dd\u10d1\u10d0",
    "\u0532\u0561\u0580\u0565\u0582",
    "\u12a0\u121b\u122d\u129b",
    "\u0dc3\u0dd2\u0d82\u0dc4\u0dbd",
    "Mixed \u041a\u0438\u0440\u0438\u043b\u043b\u0438\u0446\u0430 and Latin",
    "\u0939\u093f\u0928\u094d\u0926\u0940 123 \u0967\u0968\u0969",
]

SPECIALS = [
    "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n",
    "<|endoftext|>",
    "text before<|endoftext|>text after",
    "<|im_start|><|im_end|>",
    "<|im_start|>system\nYou are helpful.<|im_end|>",
    "<|im_start",
    "<|im_end|>trailing",
    "<think>\nLet me think.\n</think>\n\nThe answer is 4.",
    "<tool_call>{\"name\": \"f\"}</tool_call>",
    "<|fim_prefix|>def f():<|fim_suffix|>\n<|fim_middle|>",
    "<s>Hello</s>",
    "<s> [INST] question [/INST] answer </s>",
    "<unk> unknown",
    "a<s>b</s>c",
    "  <|im_start|>  spaced  <|im_end|>  ",
    "<0x41> is not a byte token",
    "<|endoftext|><|endoftext|>",
    "<|vision_start|><|image_pad|><|vision_end|>",
    "<<|im_start|>>",
    "<|im_start|>\u4f60\u597d<|im_end|>",
]

EDGE = [
    "'s", "'S", "'t", "'re", "'VE", "'m", "'ll", "'LL", "'d", "''", "'", "' s",
    "a'sb", "x'Re", "don't", "DON'T", "it's", "It'S", "rock'n'roll",
    "\u0007bell \u001b[31mred\u001b[0m", "\u007f", "~", "!!!!!!!!!!", "........",
    "----------", "==========", "a" * 64, "ab" * 40, "\u00e9" * 20,
    "\U0010fffd private use", "\ue000\uf8ff private",
]

# Pools for the random mixes.
POOLS = [
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "0123456789",
    " \t\n\r  ",
    "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
    "\u00e9\u00e8\u00ea\u00eb\u00e0\u00e2\u00e4\u00f4\u00f6\u00fb\u00fc\u00e7\u00f1\u00df",
    "\u4f60\u597d\u4e16\u754c\u65e5\u672c\u8a9e\u306e\u6587\u7ae0\ud55c\uad6d\uc5b4",
    "\U0001f600\U0001f44d\u2764\ufe0f\U0001f680\u2728\u200d",
    "\u041f\u0440\u0438\u0432\u0435\u0442\u0395\u03bb\u03bb\u03b7\u03bd",
    "\u0301\u0308\u0323",
]
WORDS = ["the", "tokenizer", "'s", "don't", "1234", "  ", "\n", "\u4f60\u597d", "caf\u00e9",
         "<|im_start|>", "<|im_end|>", "<s>", "</s>", "\U0001f600", "x", "==", "()"]


def random_strings(seed, count):
    rng = random.Random(seed)
    out = []
    for i in range(count):
        if i % 2 == 0:  # characters drawn from mixed pools
            n = rng.randint(1, 40)
            s = "".join(rng.choice(rng.choice(POOLS)) for _ in range(n))
        else:           # words and specials glued with random separators
            n = rng.randint(1, 12)
            s = "".join(rng.choice(WORDS) + rng.choice(["", " ", "  ", "\t", "\n", ".", ","])
                        for _ in range(n))
        out.append(s)
    return out


def corpus():
    items = (PROSE + CODE + NUMBERS + WHITESPACE + CJK + EMOJI + ACCENTED + SCRIPTS +
             SPECIALS + EDGE + random_strings(20240601, 60))
    seen, out = set(), []
    for s in items:
        if s not in seen:
            seen.add(s)
            out.append(s)
    for s in out:
        assert "\u0085" not in s and "\ufeff" not in s and "\0" not in s
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="exit 1 if FILE is not up to date")
    args = ap.parse_args(argv)
    text = json.dumps(corpus(), ensure_ascii=False, indent=1) + "\n"
    if args.check:
        try:
            with open(args.out, encoding="utf-8") as f:
                return 0 if f.read() == text else 1
        except OSError:
            return 1
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    print("%d strings (%d not in NFC) -> %s" % (
        len(corpus()), sum(unicodedata.normalize("NFC", s) != s for s in corpus()), args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
