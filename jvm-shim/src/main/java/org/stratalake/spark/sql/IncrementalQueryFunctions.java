package org.stratalake.spark.sql;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.ExpressionInfo;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.Function1;
import scala.Tuple3;
import scala.runtime.AbstractFunction1;

/**
 * Paimon's incremental-query table functions ({@code paimon_incremental_query(table, start,
 * end)}, {@code paimon_incremental_between_timestamp(table, t1, t2)}, {@code
 * paimon_incremental_to_auto_tag(table, tag)}) and their {@code stratalake_} aliases. Each is a
 * read of the table with Paimon's incremental read options, as Paimon rewrites them: the
 * relation resolves like {@code spark.read.option(...).table(name)} (a bare name against the
 * current catalog and database), and Python plans and validates the read
 * (stratalake.spark.read_options).
 */
public final class IncrementalQueryFunctions {
  private IncrementalQueryFunctions() {}

  /** (function name, read option, the arguments after the table name). */
  private static final String[][] FUNCTIONS = {
    {"incremental_query", "incremental-between", "start, end"},
    {"incremental_between_timestamp", "incremental-between-timestamp", "start_timestamp, end_timestamp"},
    {"incremental_to_auto_tag", "incremental-to-auto-tag", "end_tag"},
  };

  /** Every function, under its {@code paimon_} and {@code stratalake_} names. */
  public static List<Tuple3<FunctionIdentifier, ExpressionInfo, Function1<scala.collection.immutable.Seq<Expression>, LogicalPlan>>> all() {
    List<Tuple3<FunctionIdentifier, ExpressionInfo, Function1<scala.collection.immutable.Seq<Expression>, LogicalPlan>>> out =
        new ArrayList<>();
    for (String[] f : FUNCTIONS) {
      for (String prefix : new String[] {"paimon_", "stratalake_"}) {
        String name = prefix + f[0];
        ExpressionInfo info =
            new ExpressionInfo(
                IncrementalQueryFunctions.class.getName(),
                null,
                name,
                "_FUNC_(table, " + f[2] + ") - reads table with read option '" + f[1] + "'",
                "");
        out.add(new Tuple3<>(FunctionIdentifier.apply(name), info, new Builder(name, f[1], f[2])));
      }
    }
    return out;
  }

  private static final class Builder
      extends AbstractFunction1<scala.collection.immutable.Seq<Expression>, LogicalPlan> {
    private final String name;
    private final String option;
    private final String arguments;

    Builder(String name, String option, String arguments) {
      this.name = name;
      this.option = option;
      this.arguments = arguments;
    }

    @Override
    public LogicalPlan apply(scala.collection.immutable.Seq<Expression> args) {
      int wanted = arguments.split(",").length + 1;
      if (args.size() != wanted) {
        throw new IllegalArgumentException(
            name + " takes " + wanted + " arguments (table, " + arguments + "), got " + args.size());
      }
      List<String> values = new ArrayList<>();
      for (int i = 0; i < args.size(); i++) {
        Expression e = args.apply(i);
        Object value = e.foldable() ? e.eval(null) : null;
        if (value == null) {
          throw new IllegalArgumentException(
              name + ": argument " + (i + 1) + " must be a constant, non-null value, got " + e.sql());
        }
        values.add(value.toString().trim());
      }
      scala.collection.immutable.Seq<String> table;
      try {
        table = SparkSession.active().sessionState().sqlParser().parseMultipartIdentifier(values.get(0));
      } catch (org.apache.spark.sql.catalyst.parser.ParseException e) {
        throw new IllegalArgumentException(
            name + ": '" + values.get(0) + "' is not a table name: " + e.getMessage(), e);
      }
      Map<String, String> options = new HashMap<>();
      options.put(option, String.join(",", values.subList(1, values.size())));
      return new UnresolvedRelation(table, new CaseInsensitiveStringMap(options), false);
    }
  }
}
