"""What three real notebooks cost per `%%natural` cell: the first request in the notebook against the bare cell.

Builds three notebooks the way people write them, each in its own real kernel (jupyter_client, ipykernel;
pandas, numpy, matplotlib, seaborn and scikit-learn imported as notebooks do):

* sales: a 5,000 x 8 DataFrame, ~55 scratch names (tmp, df_tmp, preds, X_train, i, j, k, ...), 4 helpers;
* NLP: 2,000 reviews, Counters (one with tuple keys), a regex, a word list, helpers, scratch lists of 2,000 ints;
* star: `from numpy import *`, `from math import *` and ~100 names.

For each `%%natural` cell it prints the first request's tokens (instructions + user prompt + every offered
tool as JSON) in the notebook, then in the bare namespace (the same kernel with only the names the cell uses,
the rest put back afterwards), and what the notebook adds (goal: at most 450 per cell); then the fixed part,
instructions and tools (goal: at most 600). Counts are exact (o200k_base) when tiktoken's vocabulary loads:
build it offline with `bash ../shared/tools/tiktoken_offline_cache.sh /tmp/tk` and run with
`TIKTOKEN_CACHE_DIR=/tmp/tk`; else the estimate, and the output says which. Asserts nothing.

Run: TIKTOKEN_CACHE_DIR=/tmp/tk PYTHONPATH=core:. python bench/bench_notebook_kernels.py [--show]
(`--show` prints each cell's LOCALS as the model reads it in the notebook.)
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from bench_tokens import counter
from jupyter_client.manager import start_new_kernel

REPO = Path(__file__).resolve().parent.parent

# Run once per kernel, in a function so that it leaves no name of its own in the notebook: a model that
# records each first request (instructions, user prompt, tools) and ends the step.
SETUP = """\
%load_ext nighthawk
def _setup():
    import json, sys, nighthawk_ipython
    from pydantic_ai.messages import ModelResponse, ToolCallPart
    from pydantic_ai.models.function import FunctionModel
    requests = sys._nh_bench_requests = []
    def record(messages, info):
        if len(messages) == 1:
            user = "".join(str(p.content) for p in messages[0].parts if p.part_kind == "user-prompt")
            tools = [json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters_json_schema})
                     for t in [*info.function_tools, *info.output_tools]]
            requests.append({"instructions": info.instructions or "", "user": user, "tools": tools})
        return ModelResponse(parts=[ToolCallPart("nh_outcome", {"kind": "pass"})])
    nighthawk_ipython.configure(model=FunctionModel(record, model_name="recorder"), shell=get_ipython())
_setup(); del _setup
"""

# Keeps only `keep` of the user's names (the rest saved aside), or puts everything back.
BARE = """\
def _bare(keep):
    import sys
    ns, hidden = get_ipython().user_ns, get_ipython().user_ns_hidden
    sys._nh_bench_saved = dict(ns)
    for name in [n for n in ns if n not in hidden and not n.startswith("__") and n not in keep]:
        del ns[name]
_bare({keep!r} + ["_bare"]); del _bare
"""
RESTORE = "get_ipython().user_ns.update(__import__('sys')._nh_bench_saved); del _bare"
LAST = "print('NHBENCH' + __import__('json').dumps(__import__('sys')._nh_bench_requests[-1]))"

SALES = [
    """\
import os, re, json
from pathlib import Path
from collections import Counter, defaultdict
from datetime import datetime, timedelta
import numpy as np
import pandas as pd
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import seaborn as sns
from sklearn.model_selection import train_test_split
from sklearn.linear_model import LinearRegression
from sklearn.metrics import mean_absolute_error, r2_score
""",
    """\
DATA_DIR = Path("data")
CURRENCY = "EUR"
SEED = 42
rng = np.random.default_rng(SEED)
n = 5000
sales = pd.DataFrame({
    "date": pd.date_range("2023-01-01", periods=n, freq="h"),
    "region": rng.choice(["north", "south", "east", "west"], n),
    "product": rng.choice(["widget", "gadget", "gizmo", "doohickey", "thingamajig"], n),
    "manager": rng.choice(["Ada", "Grace", "Linus", "Guido"], n),
    "units": rng.integers(1, 50, n),
    "price": rng.uniform(2, 120, n).round(2),
    "channel": pd.Categorical(rng.choice(["web", "store", "phone"], n)),
    "revenue": 0.0,
})
sales["revenue"] = sales["units"] * sales["price"]
""",
    """\
def clean(df):
    \"\"\"Drop rows without revenue and lower-case the text columns.\"\"\"
    return df.dropna(subset=["revenue"]).assign(region=df["region"].str.lower())

def pct(part, whole):
    return round(100 * part / whole, 1)

def plot_region(df, region):
    ax = df[df["region"] == region].set_index("date")["revenue"].resample("W").sum().plot()
    return ax

def add_margin(df, rate=0.2):
    return df.assign(margin=df["revenue"] * rate)
""",
    """\
tmp = sales.head(100)
df_tmp = clean(sales)
df2 = add_margin(df_tmp)
df3 = df2[df2["margin"] > 50]
by_region = sales.groupby("region")["revenue"].sum()
by_product = sales.groupby("product")["units"].sum()
by_month = sales.set_index("date")["revenue"].resample("ME").sum()
daily = sales.set_index("date")["revenue"].resample("D").sum()
pivot = sales.pivot_table(index="region", columns="product", values="revenue", aggfunc="sum")
corr = sales[["units", "price", "revenue"]].corr()
big_orders = sales[sales["revenue"] > 3000]
small = sales[sales["units"] < 3]
top10 = sales.nlargest(10, "revenue")
summary = sales.describe()
counts = Counter(sales["region"])
mgr_counts = defaultdict(int)
for m in sales["manager"]:
    mgr_counts[m] += 1
""",
    """\
X = sales[["units", "price"]].to_numpy()
y = sales["revenue"].to_numpy()
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=SEED)
model = LinearRegression().fit(X_train, y_train)
preds = model.predict(X_test)
mae = mean_absolute_error(y_test, preds)
r2 = r2_score(y_test, preds)
lr = 0.01
threshold = 3000
mask = sales["revenue"] > threshold
ratio = mask.mean()
""",
    """\
fig, ax = plt.subplots()
sns.barplot(x=by_region.index, y=by_region.values, ax=ax)
plt.close(fig)
i, j, k = 0, 1, 2
x = 3.5
row = sales.iloc[0]
col = "revenue"
cols = list(sales.columns)
idx = sales.index[:10]
names = ["north", "south", "east", "west"]
vals = [1, 2, 3]
res = pct(by_region["north"], by_region.sum())
out = {"north": res}
result = None
result2 = sales["units"].sum()
sample = sales.sample(20, random_state=1)
s = "scratch"
t = 0.5
first = sales.iloc[0]
last = sales.iloc[-1]
n_rows, n_cols = sales.shape
total = float(sales["revenue"].sum())
avg = total / n_rows
err = abs(avg - 100)
""",
]
SALES_CELLS = [
    ("Total the revenue of <sales> per region into <:totals>.", ["sales"]),
    ("Which product sold the most units in <sales>? Store its name in <:top_product>.", ["sales"]),
    ("Using `model` and <X_test>, say how far the predictions are from <y_test> in <:report>.", ["model", "X_test", "y_test"]),
    ("Find the manager's best region in <sales>, i.e. the one with the most revenue, into <:best>.", ["sales"]),
]

NLP = [
    """\
import re, json, random, string
from collections import Counter, defaultdict
import numpy as np
import pandas as pd
from sklearn.feature_extraction.text import CountVectorizer
""",
    """\
random.seed(3)
WORDS = "great good bad slow fast delivery price quality broken love hate return refund box color size".split()
reviews = [" ".join(random.choice(WORDS) for _ in range(random.randint(5, 30))) for _ in range(2000)]
stars = [random.randint(1, 5) for _ in range(2000)]
token_re = re.compile(r"[a-z']+")
token_list = ["the", "a", "of", "and", "to"]
stopwords = {"the", "a", "of", "and", "to", "is", "it", "in"}
def tokenize(text):
    \"\"\"Lower-case words of a review.\"\"\"
    return token_re.findall(text.lower())
def clean(text):
    return " ".join(w for w in tokenize(text) if w not in stopwords)
def sentiment(text):
    \"\"\"+1 per positive word, -1 per negative one.\"\"\"
    words = tokenize(text)
    return sum(w in {"great", "good", "love", "fast"} for w in words) - sum(w in {"bad", "slow", "hate", "broken"} for w in words)
""",
    """\
word_counts = Counter(w for r in reviews for w in tokenize(r))
bigrams = Counter((a, b) for r in reviews for a, b in zip(tokenize(r), tokenize(r)[1:]))
by_star = defaultdict(list)
for r, s in zip(reviews, stars):
    by_star[s].append(r)
lengths = [len(r) for r in reviews]
ids = list(range(2000))
labels = [1 if s >= 4 else 0 for s in stars]
scores = [sentiment(r) for r in reviews]
tmp = [len(tokenize(r)) for r in reviews]
df = pd.DataFrame({"review": reviews, "stars": stars, "score": scores})
vec = CountVectorizer(max_features=50)
X = vec.fit_transform(reviews)
i = 0
r = reviews[0]
w = "delivery"
top = word_counts.most_common(5)
avg_len = sum(lengths) / len(lengths)
""",
]
NLP_CELLS = [
    ("Find the ten most common words in <word_counts> that are not in <stopwords>, into <:top_words>.", ["word_counts", "stopwords"]),
    ("Split each of the first 5 <reviews> with <token_re> into <:tokens>.", ["reviews", "token_re"]),
    ("What share of <reviews> mention delivery? Into <:share>.", ["reviews"]),
]

STAR = [
    "from numpy import *\nfrom math import *\nimport pandas as pd\n",
    "\n".join(
        [
            "speeds = array([12.5, 30.1, 22.4, 18.9, 27.3])",
            "distances = linspace(0, 100, 50)",
            "times = arange(1, 51) * 0.5",
            *[f"v{i} = {i} * 1.5" for i in range(40)],
            *[f"series_{i} = arange({i + 5})" for i in range(20)],
            *[f"label_{i} = 'run {i}'" for i in range(20)],
            "grid = zeros((20, 20))",
            "ones_33 = full(33, 0.5)",
            "table = pd.DataFrame({'t': times, 'd': distances})",
            "a, b, c = 1, 2, 3",
            "def speed(d, t):\n    return d / t",
        ]
    ),
]
STAR_CELLS = [
    ("Take the max of all speeds and store it in <:fastest>.", ["speeds"]),
    ("Compute the mean of <distances> divided by <times> into <:avg_speed>.", ["distances", "times"]),
    ("Using speed(, e.g. on <table>, fill <:speeds_by_row>.", ["table", "speed"]),
]

NOTEBOOKS = {"sales": (SALES, SALES_CELLS), "NLP": (NLP, NLP_CELLS), "star": (STAR, STAR_CELLS)}


def run(client, code: str, *, history: bool = False) -> str:
    """Execute `code`; return its stdout; raise on an error."""
    out: list[str] = []
    errors: list[str] = []

    def hook(message) -> None:
        kind, content = message["msg_type"], message["content"]
        if kind == "stream":
            out.append(content["text"])
        elif kind == "error":
            errors.append("\n".join(content["traceback"]))

    client.execute_interactive(code, store_history=history, output_hook=hook, timeout=300)
    if errors:
        raise RuntimeError(errors[0])
    return "".join(out)


def first_request(client, program: str) -> dict:
    run(client, f"%%natural --display none\n{program}")
    printed = run(client, LAST)
    return json.loads(printed[printed.index("NHBENCH") + len("NHBENCH") :])


def main() -> None:
    count, label = counter()
    show = "--show" in sys.argv
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "core"), str(REPO)]), "PYTHONWARNINGS": "ignore"}
    print(f"first-request tokens per %%natural cell, notebook vs bare namespace ({label}; goal: adds at most 450)")
    print(f"{'notebook':<7} {'cell':<60}{'notebook':>9}{'bare':>6}{'adds':>6}{'LOCALS':>8}")
    fixed = None
    for notebook, (cells, programs) in NOTEBOOKS.items():
        manager, client = start_new_kernel(kernel_name="python3", env=env, cwd=str(REPO))
        try:
            run(client, SETUP)
            for cell in cells:
                run(client, cell, history=True)
            for program, keep in programs:
                whole = first_request(client, program)
                run(client, BARE.format(keep=keep))
                try:
                    bare = first_request(client, program)
                finally:
                    run(client, RESTORE)
                fixed = count(whole["instructions"]) + sum(count(tool) for tool in whole["tools"])
                totals = [fixed + count(request["user"]) for request in (whole, bare)]
                start, end = "<<<NH:LOCALS>>>", "<<<NH:END_LOCALS>>>"
                section = whole["user"][whole["user"].index(start) + len(start) : whole["user"].index(end)]
                shown = program if len(program) <= 58 else program[:57] + "…"
                print(f"{notebook:<7} {shown:<60}{totals[0]:>9}{totals[1]:>6}{totals[0] - totals[1]:>6}{count(section):>8}")
                if show:
                    print(section)
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
    print(f"fixed part (instructions + tools): {fixed} (goal: at most 600)")


if __name__ == "__main__":
    main()
