"""Captions for the motion library: paraphrases, a held-out caption style, and clip-name parsing.

A `MotionDescription` says what a clip shows (species, family, canonical action, speed,
direction, manner, and optional segments for transitions). From it:

* `paraphrases(desc, n, seed)` gives n distinct English captions (the training style), varied in
  subject ("a wolf", "the canine", "grey wolf"), verb synonyms ("trots", "jogs", "moves at a
  brisk trot"), tense/aspect (present, progressive, gerund fragment), modifier order and frame
  ("The clip shows ...", "In this clip, ..."). Captions ending in "." (or "?") are sentences and
  start with a capital; the others are lowercase fragments ("wolf trotting forward, then sitting
  down"). Distinct means different words (`caption_key`), not just case or punctuation.
* `heldout_caption(desc, seed)` gives one caption in a style the paraphrases never use, for
  testing generalisation: imperatives and requests built on the verb's base form ("Make the
  wolf trot onward.", "Could the wolf trot onward?", "Your wolf should ...") and terse tags
  ("wolf | trot | forward | brisk"), with their own speed and direction phrasings. Paraphrases use
  only third-person and -ing verb forms, never the held-out templates' fixed words
  (make, have, let, your, should, must, could) nor "|" or "?".
* `describe_clip_name(name, species, family)` turns authored clip names ("Gallop_Jump",
  "AnimalArmature|Walk", "Jump_toIdle", "01_01") into descriptions.

Speed words are relative to size: legged creatures use the Froude-like number v / sqrt(g·L)
(L the hip height), legless ones (serpent, fish) body lengths per second, each compared with a
nominal value for the action. Stationary actions (sit, idle, eat, ...) ignore a numeric speed
and a "forward"/"in place" direction (an explicit speed_word is still used).

Pure Python; deterministic for a given seed.

Modules: `lexicon` (verbs, species), `phrasing` (speed, direction, manner), `description`
(MotionDescription), `render` (one caption from a template), `paraphrase` (the training style),
`heldout` (the held-out style), `clip_names` (authored clip names).
"""
