"""The Home page's guided tour: what each step tells a class, and the figures it states.

Every number a step states is a constant here, and ``tests/dashboard/test_tour.py`` measures it on the shipped
demo (``assets/``) with the app's default settings, through the services the pages call: the tour and the data
cannot drift apart. Figures are for the embedded all-MiniLM-L6-v2 (its own recipe, the pooling ``model``: mean
pooling, then normalised; 128 tokens: the sidebar's defaults). No Streamlit here.
"""

from __future__ import annotations

# step 1: Sentence pairs (the demo pairs, raw cosine)
MEAN_SPEARMAN = 75  # about: mean pooling's Spearman x100 (within SPEARMAN_ROUNDING)
CLS_SPEARMAN = 70  # about: cls pooling's
SPEARMAN_ROUNDING = 1.5  # "about 75": the measured value within this many points
CLS_UNRELATED_COSINE = 0.5  # under cls, pairs scored below 1 (unrelated) still average a cosine above this
MEAN_UNRELATED_COSINE = 0.3  # under mean pooling they average below this
# step 2: the typed pair
SWAPPED = ("The dog bit the man.", "The man bit the dog.")
SWAPPED_COSINE = 0.95  # both poolings: above this for opposite meanings
# step 3: Anisotropy (the demo corpus, raw and calibrated on itself)
MEAN_AVG_COSINE = 0.1  # mean pooling: average cosine below this (nearly isotropic by that measure)
MEAN_ISOSCORE = 0.5  # ... yet IsoScore below this: a few directions carry most of the variance
CLS_AVG_COSINE = 0.5  # cls: average cosine above this (a narrow cone)
WHITENED_AVG_COSINE = 0.01  # whitening: |average cosine| below this, for cls and mean
WHITENED_ISOSCORE = 0.95  # ... and IsoScore above this
# step 4: Calibration (the page's table: demo pairs, fitted on the demo corpus + the pairs' sentences)
TABLE_POOLINGS = ("model", "cls", "first_last_avg")  # the table's default poolings (sidebar pooling first)
KEPT_WHITENING = "whitening:64"  # whitening that keeps the top 64 components (whitening:K's default)
LIFTED = ("cls", "first_last_avg")  # the anisotropic poolings it lifts
MEAN_KEPT = 1.5  # ... while mean stays within this many points of raw
FULL_WHITENING_DROP = 2  # full whitening (all 384 dimensions) lowers mean pooling by more than this
# step 5: Neighbours (the demo corpus, whitening:K fitted on it)
NEIGHBOURS_CHANGED = 0.5  # mean overlap@10 under whitening:64 is below this: calibration moves neighbours
# step 6: Compare spaces
RANDOM_OVERLAP = 0.1  # trained vs random weights: mean overlap@10 below this (under one of ten neighbours)
CLS_HUB_SKEWNESS = 5  # cls: k-occurrence skewness above this (hubs: a few texts are everyone's neighbour)
MEAN_HUB_SKEWNESS = 2  # mean pooling and whitened cls: below this
# step 7: Embedding anatomy
XLMR_EMBEDDING_SHARE = 2 / 3  # xlm-roberta-base: more than this share of the parameters are embeddings
# step 8: Retrieval (the demo task: 55 queries, 300 documents, the page's Run retrieval)
RETRIEVAL_RAW_NDCG = 0.95  # raw nDCG@10 above this: the model finds most answers first
RETRIEVAL_WORSE = "whitening"  # fitted on 300 documents for 384 dimensions: the paired test calls it worse
RETRIEVAL_SAME = ("centre", "csls")  # ... and these: no difference it can tell from chance

STEPS = f"""
1. **Sentence pairs**, demo pairs, the sidebar's default pooling `model` (this model's own recipe: `mean`
   pooling, then normalised, as sentence-transformers runs it): Spearman about {MEAN_SPEARMAN} against
   the gold scores. Add `cls` to the comparison: about {CLS_SPEARMAN}, pooling matters. Under `cls` even
   unrelated pairs (gold below 1) score a cosine above {CLS_UNRELATED_COSINE} on average (mean pooling: below
   {MEAN_UNRELATED_COSINE}).
2. Choose **Type two sentences**: *{SWAPPED[0]}* / *{SWAPPED[1]}* The cosine is above {SWAPPED_COSINE} for
   opposite meanings, with either pooling: embeddings follow shared words. **Lexical overlap** shows it on every
   pair.
3. **Anisotropy**, demo corpus: with the model's own mean pooling the average cosine of random pairs is below
   {MEAN_AVG_COSINE} (nearly isotropic by that measure), yet IsoScore is below {MEAN_ISOSCORE}: a few
   directions carry most of the variance. Switch the sidebar to `cls`: the average cosine is above
   {CLS_AVG_COSINE}, a narrow cone. Whitening takes both to an average cosine of 0 and an IsoScore above
   {WHITENED_ISOSCORE}. The layer heatmap shows where in the network the cone forms.
4. **Calibration**, **Compute table** (fitted on the demo corpus + the pairs' sentences, no labels):
   `{KEPT_WHITENING}` lifts the anisotropic poolings (`cls`, `first_last_avg`) and keeps `model` (mean) within
   {MEAN_KEPT:g} points: BERT-flow's lesson. Whitening all 384 dimensions lowers it by more than
   {FULL_WHITENING_DROP}: this model was trained for cosine similarity with mean pooling, and the weakest
   directions whitening amplifies are noise.
5. **Neighbours** and **Projection map**: pick a sentence and compare its neighbours before and after
   whitening:K (`{KEPT_WHITENING}`): across the corpus fewer than half of each text's ten neighbours stay
   (mean overlap@10 below {NEIGHBOURS_CHANGED}).
6. **Compare spaces**, preset *Trained vs untrained*: random weights keep fewer than one of each text's ten
   neighbours ({RANDOM_OVERLAP:.0%}), yet CKA stays above 0 (compare linear and debiased; the heatmap shows it
   layer by layer). Then *CLS vs mean*: `cls` has hubs (skewness above {CLS_HUB_SKEWNESS}: a few texts are
   everyone's neighbour), mean pooling hardly (below {MEAN_HUB_SKEWNESS}); calibrating `cls` removes them.
7. **Embedding anatomy**: switch to xlm-roberta-base: more than two thirds of the parameters are embeddings.
8. **Retrieval**, demo task, **Run retrieval**: raw nDCG@10 is above {RETRIEVAL_RAW_NDCG} (most answers come first).
   Add `{RETRIEVAL_WORSE}` to the fixes: fitted on 300 documents for 384 dimensions, the paired test over the
   queries calls it *worse*; `{RETRIEVAL_SAME[0]}` and `{RETRIEVAL_SAME[1]}` move nDCG@10 by less than it can tell
   from chance (*no difference*). The scatter shows which queries a fix costs; **Clustering** below scores
   k-means against the demo topics, raw and fixed.
"""
