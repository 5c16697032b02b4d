"""Write options: what stratalake does not honour is refused by name, before anything is written."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.spark


def test_unhonoured_write_options_are_refused(spark: Any, db: str) -> None:
    t = f"{db}.wopt"
    spark.sql(
        f"CREATE TABLE {t} (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED) TBLPROPERTIES ('bucket' = '2')"
    )
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a')")
    df = spark.createDataFrame([(2, "b")], "k long, v string")
    refusals = {
        # Schema evolution on write is honoured (test_write_merge_schema.py), but not explicit casts.
        (
            "write.merge-schema.explicit-cast",
            "true",
        ): "write option 'write.merge-schema.explicit-cast' is not supported",
        ("mergeSchema", "on"): "write option 'mergeSchema'='on' must be 'true' or 'false'",
        ("bucket", "4"): "write option 'bucket'='4' is a table option \\(the table has it '2'\\)",
        ("write-only", "true"): "write option 'write-only'='true' is a table option",
        (
            "checkpointLocaton",
            "/tmp/x",
        ): "unknown write option 'checkpointLocaton' \\(did you mean 'checkpointLocation'\\?\\)",
        ("commit.user", "me"): "write option 'commit.user' is for streaming writes",
        # stratalake.* keys are checked too: only the shim's own pass, a table option is one.
        ("stratalake.write.mod", "append"): "unknown write option 'stratalake.write.mod'",
        (
            "stratalake.key-index-cache.max-memory",
            "1 gb",
        ): "write option 'stratalake.key-index-cache.max-memory'='1 gb' is a table option",
    }
    for (key, value), error in refusals.items():
        # (?i): Spark hands write options over lower-cased.
        with pytest.raises(Exception, match=f"(?i)table {db.split('.')[1]}.wopt: {error}"):
            df.writeTo(t).option(key, value).append()
    with pytest.raises(Exception, match=r"(?i)unknown read option .stratalake\.read\.native\.enabled."):
        spark.read.option("stratalake.read.native.enabled", "false").table(t).collect()  # a SQL setting
    with pytest.raises(Exception, match="unknown write option 'bogus'"):
        df.write.mode("append").option("bogus", "1").saveAsTable(t)
    assert spark.sql(f"SELECT count(*) FROM {db}.`wopt$snapshots`").collect()[0][0] == 1  # nothing written
    # Accepted: the table's own options with its values, switches turned off, Spark's own options.
    df.writeTo(t).option("bucket", "2").option("write.merge-schema", "false").append()
    df.write.mode("overwrite").option("partitionOverwriteMode", "dynamic").insertInto(t)
    assert [tuple(r) for r in spark.sql(f"SELECT * FROM {t}").collect()] == [(2, "b")]
