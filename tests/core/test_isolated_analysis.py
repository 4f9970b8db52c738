"""The ordinary work of a data notebook runs under `isolated(writable=[S])`: the walls stop what reaches
beyond the step, not pandas, numpy, matplotlib, scikit-learn, sqlite, tqdm, yaml or an `__import__`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import nighthawk as nh
from scripting import call, finish, scripted_executor

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="isolated steps are Linux only")

pandas = pytest.importorskip("pandas")
pytest.importorskip("matplotlib")
pytest.importorskip("sklearn")
pytest.importorskip("scipy")


@nh.natural_function
def analyse(sales: object, folder: str) -> object:
    result = None
    """natural
    Analyse <sales>, saving what you make under <folder>; set <:result>.
    """
    return result


def expressions(folder: Path) -> dict[str, str]:
    return {
        "pandas": "sales.groupby('city').amount.sum().to_dict()",
        "numpy": "float(__import__('numpy').percentile(sales.amount.to_numpy(), 90))",
        "matplotlib savefig": (
            "(plt := __import__('matplotlib.pyplot').pyplot).switch_backend('Agg') or "
            f"sales.amount.plot().figure.savefig({str(folder / 'amounts.png')!r}) or plt.close('all')"
        ),
        "scikit-learn KMeans": (
            "__import__('sklearn.cluster').cluster.KMeans(n_clusters=2, n_init=2, random_state=0)"
            ".fit(sales[['amount']]).labels_.tolist()"
        ),
        "sqlite in writable": (
            f"(db := __import__('sqlite3').connect({str(folder / 'sales.db')!r})) and "
            "sales.to_sql('sales', db, index=False) and db.execute('select count(*) from sales').fetchone()"
        ),
        "tqdm": "sum(x for x in __import__('tqdm').tqdm(range(1000), disable=False, file=__import__('sys').stderr))",
        "yaml": "__import__('yaml').safe_dump({'cities': sorted(sales.city.unique())})",
        "__import__ of scipy.stats": "float(__import__('scipy.stats').stats.zscore(sales.amount.to_numpy())[0])",
        "a temporary file": "__import__('tempfile').NamedTemporaryFile().name",
    }


@pytest.mark.parametrize("name", list(expressions(Path("/"))))
def test_ordinary_analysis_runs_isolated(tmp_path: Path, name: str) -> None:
    sales = pandas.DataFrame({"city": ["Oslo", "Lima", "Oslo", "Pune"], "amount": [3.5, 1.25, 8.0, 2.0]})
    executor, script = scripted_executor(
        [call("nh_eval", expression=expressions(tmp_path)[name])], [finish("pass")]
    )
    with nh.run(executor), nh.scope(oversight=nh.oversight.isolated(writable=[tmp_path])):
        analyse(sales, str(tmp_path))
    [read] = script.last_tool_results()
    assert '"error": null' in read, read


def test_a_figure_saved_into_writable_is_there_after_the_step(tmp_path: Path) -> None:
    sales = pandas.DataFrame({"city": ["Oslo"], "amount": [3.5]})
    executor, _ = scripted_executor([call("nh_eval", expression=expressions(tmp_path)["matplotlib savefig"])], [finish("pass")])
    with nh.run(executor), nh.scope(oversight=nh.oversight.isolated(writable=[tmp_path])):
        analyse(sales, str(tmp_path))
    assert (tmp_path / "amounts.png").read_bytes().startswith(b"\x89PNG")
