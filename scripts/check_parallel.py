#!/usr/bin/env python3
"""Checks a parallel data set for pointwise judging (issue 13, METHODS §8): demo/parallel.jsonl.

One JSON object per line, UTF-8, fields as in the README ("Demo data: demo/parallel.jsonl"):
  id        "<group>-<language>", unique in the file
  group     the parallel group: its items are the same content in each language
  language  one of the required languages, once per group
  category  the task; its input field is required (qa: context, translation: source,
            summary: document, dialogue: dialog) and other tasks' input fields are refused;
            `question` is required in every item (the dataset loader requires it today)
  reference the answer being judged, in the item's language
  quality   the simulator's ground truth in [0, 1], the same in every language of a group
Every text is written in its language's script (Latin, Cyrillic, Arabic, Devanagari, Han) and
carries no bidirectional control characters: right-to-left text is stored as plain code points
and shown by the reader's bidi algorithm. A reference is unique within its language (the
simulator finds an answer's quality by text and language) and differs across a group.

Prints one summary line on success. On failure prints `file:line: what` for every problem
(stderr) and exits 1; usage errors exit 2. Python 3 standard library only.
"""
import argparse
import json
import os
import sys
import unicodedata

DEFAULT_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "demo",
                            "parallel.jsonl")
DEFAULT_LANGUAGES = "en,fr,ru,ar,hi,zh"
MIN_GROUPS = 30  # issue 13 scope 8: at least 30 parallel groups

# The input field each task reads (the contract the pointwise templates share).
TASK_FIELD = {"qa": "context", "math": None, "translation": "source", "summary": "document",
              "dialogue": "dialog", "generic": None}
TASK_FIELDS = {"context", "source", "document", "dialog"}
TEXT_FIELDS = ("id", "group", "language", "category", "question", "reference")
KNOWN_FIELDS = set(TEXT_FIELDS) | TASK_FIELDS | {"quality"}

# Explicit bidi formatting: embeddings/overrides U+202A-U+202E, isolates U+2066-U+2069, and the
# implicit marks LRM, RLM and ALM, none of which belongs in stored text.
BIDI_CONTROLS = set(range(0x202A, 0x202F)) | set(range(0x2066, 0x206A)) | {0x200E, 0x200F, 0x061C}

# Code point ranges of each language's script: every text must contain a letter from them.
SCRIPTS = {
    "latin": ((0x41, 0x5A), (0x61, 0x7A), (0xC0, 0x24F)),
    "cyrillic": ((0x400, 0x4FF),),
    "arabic": ((0x600, 0x6FF), (0x750, 0x77F)),
    "devanagari": ((0x900, 0x97F),),
    "han": ((0x4E00, 0x9FFF), (0x3400, 0x4DBF)),
}
LANGUAGE_SCRIPT = {"en": "latin", "fr": "latin", "de": "latin", "es": "latin", "ru": "cyrillic",
                   "ar": "arabic", "hi": "devanagari", "zh": "han"}


def in_script(text, script):
    return any(lo <= ord(c) <= hi for c in text for lo, hi in SCRIPTS[script])


def quality_band(q):
    if q >= 0.8:
        return "good"
    if 0.4 <= q <= 0.6:
        return "mediocre"
    if q <= 0.2:
        return "wrong"
    return "other"


class Checker:
    def __init__(self, path, languages, min_groups):
        self.path, self.languages, self.min_groups = path, languages, min_groups
        self.errors = []
        self.ids = {}          # id -> line
        self.references = {}   # (language, reference) -> line
        self.groups = {}       # group -> {"line", "category", "quality", "langs": {lang: line}}
        self.n_items = 0

    def error(self, line, what):
        self.errors.append("%s:%d: %s" % (self.path, line, what))

    def check_text(self, line, field, text):
        if not text.strip():
            self.error(line, 'field "%s": expected a non-empty string' % field)
        for c in text:
            cp = ord(c)
            if cp in BIDI_CONTROLS:
                self.error(line, 'field "%s": bidi control character U+%04X (store plain code '
                                 'points; the reader lays out right-to-left text)' % (field, cp))
            elif cp < 0x20 or 0x7F <= cp <= 0x9F:
                self.error(line, 'field "%s": control character U+%04X' % (field, cp))
            elif cp == 0xFFFD:
                self.error(line, 'field "%s": U+FFFD replacement character (text broken by a '
                                 'bad conversion)' % field)
        if not unicodedata.is_normalized("NFC", text):
            self.error(line, 'field "%s": expected NFC-normalised text' % field)

    def check_item(self, line, item):
        for key in item:
            if key not in KNOWN_FIELDS:
                self.error(line, 'field "%s": unknown field (known: %s)'
                           % (key, ", ".join(sorted(KNOWN_FIELDS))))
        for field in TEXT_FIELDS + tuple(sorted(TASK_FIELDS)):
            if field not in item:
                continue
            if not isinstance(item[field], str):
                self.error(line, 'field "%s": expected a string, got %s'
                           % (field, type(item[field]).__name__))
            else:
                self.check_text(line, field, item[field])
        missing = [f for f in TEXT_FIELDS + ("quality",) if f not in item]
        for field in missing:
            self.error(line, 'field "%s": missing' % field)
        if missing or any(not isinstance(item[f], str) for f in TEXT_FIELDS):
            # Still count the item in its group, so the group is not also reported incomplete.
            if isinstance(item.get("group"), str) and isinstance(item.get("language"), str):
                self.groups.setdefault(item["group"], self.new_group(line, None, None))[
                    "langs"].setdefault(item["language"], line)
            return

        category, language = item["category"], item["language"]
        if category not in TASK_FIELD:
            self.error(line, 'field "category": expected one of %s, got "%s"'
                       % (", ".join(sorted(TASK_FIELD)), category))
        else:
            needed = TASK_FIELD[category]
            if needed and needed not in item:
                self.error(line, 'field "%s": required for category "%s"' % (needed, category))
            for other in sorted(TASK_FIELDS - {needed}):
                if other in item:
                    self.error(line, 'field "%s": not an input of category "%s"'
                               % (other, category))
        if language not in self.languages:
            self.error(line, 'field "language": expected one of %s, got "%s"'
                       % (", ".join(self.languages), language))
        elif language in LANGUAGE_SCRIPT:
            script = LANGUAGE_SCRIPT[language]
            for field in ("question", "reference") + tuple(sorted(TASK_FIELDS)):
                if isinstance(item.get(field), str) and not in_script(item[field], script):
                    self.error(line, 'field "%s": no %s letter in a "%s" text (untranslated?)'
                               % (field, script.capitalize(), language))

        quality = item["quality"]
        if isinstance(quality, bool) or not isinstance(quality, (int, float)):
            self.error(line, 'field "quality": expected a number in [0, 1], got %s'
                       % json.dumps(quality, ensure_ascii=False))
            quality = None
        elif not 0 <= quality <= 1:
            self.error(line, 'field "quality": expected a number in [0, 1], got %s' % quality)
            quality = None

        expected_id = "%s-%s" % (item["group"], language)
        if item["id"] != expected_id:
            self.error(line, 'field "id": expected "%s" (group-language), got "%s"'
                       % (expected_id, item["id"]))
        if item["id"] in self.ids:
            self.error(line, 'field "id": "%s" already used at line %d'
                       % (item["id"], self.ids[item["id"]]))
        else:
            self.ids[item["id"]] = line
        key = (language, item["reference"])
        if key in self.references:
            self.error(line, 'field "reference": the same "%s" text as line %d (the simulator '
                             'finds quality by text and language)' % (language, self.references[key]))
        else:
            self.references[key] = line

        group = self.groups.setdefault(item["group"], self.new_group(line, category, quality))
        if group["category"] is None:
            group["category"] = category
        if group["quality"] is None:
            group["quality"] = quality
        if category != group["category"]:
            self.error(line, 'field "category": "%s", but group "%s" is "%s" (line %d)'
                       % (category, item["group"], group["category"], group["line"]))
        if quality is not None and group["quality"] is not None and quality != group["quality"]:
            self.error(line, 'field "quality": %s, but group "%s" has %s (line %d): the content '
                             'is the same in every language' % (quality, item["group"],
                                                               group["quality"], group["line"]))
        if language in group["langs"]:
            self.error(line, 'field "language": "%s" twice in group "%s" (line %d)'
                       % (language, item["group"], group["langs"][language]))
        else:
            group["langs"][language] = line
        previous = group["refs"].get(item["reference"])
        if previous is not None:
            self.error(line, 'field "reference": the same text as line %d of group "%s" (a '
                             'translation differs across languages)' % (previous, item["group"]))
        else:
            group["refs"][item["reference"]] = line

    @staticmethod
    def new_group(line, category, quality):
        return {"line": line, "category": category, "quality": quality, "langs": {}, "refs": {}}

    def check_file(self, data):
        if data.startswith(b"\xef\xbb\xbf"):
            self.error(1, "byte order mark: expected plain UTF-8")
            data = data[3:]
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        else:
            self.error(max(len(lines), 1), "expected a newline at the end of the file")
        for number, raw in enumerate(lines, 1):
            if raw.endswith(b"\r"):
                self.error(number, "CR LF line ending: expected LF")
                raw = raw[:-1]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                self.error(number, "not valid UTF-8 (byte %d: %s)" % (e.start + 1, e.reason))
                continue
            if not text.strip():
                self.error(number, "empty line: expected one JSON object per line")
                continue
            try:
                item = json.loads(text, object_pairs_hook=self.no_duplicate_keys,
                                  parse_constant=self.no_constant)
            except ValueError as e:
                self.error(number, "not valid JSON: %s" % e)
                continue
            if not isinstance(item, dict):
                self.error(number, "expected a JSON object, got %s" % type(item).__name__)
                continue
            self.n_items += 1
            self.check_item(number, item)
        for name, group in self.groups.items():
            missing = [lang for lang in self.languages if lang not in group["langs"]]
            if missing:
                self.error(group["line"], 'group "%s": missing language%s %s'
                           % (name, "s" if len(missing) > 1 else "", ", ".join(missing)))
        if len(self.groups) < self.min_groups:
            self.error(max(len(lines), 1), "%d parallel groups: expected at least %d"
                       % (len(self.groups), self.min_groups))

    @staticmethod
    def no_duplicate_keys(pairs):
        keys = [k for k, _ in pairs]
        for k in keys:
            if keys.count(k) > 1:
                raise ValueError('key "%s" appears twice' % k)
        return dict(pairs)

    @staticmethod
    def no_constant(name):
        raise ValueError("%s is not a JSON number" % name)

    def summary(self):
        categories, bands = {}, {}
        for group in self.groups.values():
            categories[group["category"]] = categories.get(group["category"], 0) + 1
            band = quality_band(group["quality"])
            bands[band] = bands.get(band, 0) + 1
        return ("%s: ok, %d items in %d parallel groups x %d languages (%s); tasks: %s; "
                "quality (simulator ground truth) per group: %s"
                % (self.path, self.n_items, len(self.groups), len(self.languages),
                   " ".join(self.languages),
                   ", ".join("%s %d" % kv for kv in sorted(categories.items())),
                   ", ".join("%s %d" % (b, bands[b]) for b in
                             ("good", "mediocre", "wrong", "other") if b in bands)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", nargs="?", default=DEFAULT_FILE,
                        help="the JSONL file (default: demo/parallel.jsonl)")
    parser.add_argument("--languages", default=DEFAULT_LANGUAGES,
                        help="comma-separated languages every group must have, once each "
                             "(default: %(default)s)")
    parser.add_argument("--min-groups", type=int, default=MIN_GROUPS,
                        help="fewest parallel groups accepted (default: %(default)s)")
    args = parser.parse_args()
    languages = [lang for lang in args.languages.split(",") if lang]
    if not languages or len(set(languages)) != len(languages):
        parser.error("--languages: expected distinct comma-separated codes")
    path = os.path.relpath(args.file) if args.file == DEFAULT_FILE else args.file
    try:
        with open(args.file, "rb") as f:
            data = f.read()
    except OSError as e:
        print("check_parallel: %s: %s" % (args.file, e.strerror), file=sys.stderr)
        return 2
    checker = Checker(path, languages, args.min_groups)
    checker.check_file(data)
    if checker.errors:
        for message in checker.errors:
            print(message, file=sys.stderr)
        print("%s: %d problem%s" % (path, len(checker.errors),
                                    "" if len(checker.errors) == 1 else "s"), file=sys.stderr)
        return 1
    print(checker.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
