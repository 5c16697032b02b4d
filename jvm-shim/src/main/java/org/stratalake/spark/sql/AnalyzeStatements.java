package org.stratalake.spark.sql;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.analysis.ResolvedTable;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.plans.logical.AnalyzeColumn;
import org.apache.spark.sql.catalyst.plans.logical.AnalyzeTable;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.stratalake.spark.source.LakeTable;
import scala.jdk.javaapi.CollectionConverters;

/**
 * {@code ANALYZE TABLE t COMPUTE STATISTICS [FOR COLUMNS a, b | FOR ALL COLUMNS]} on a stratalake
 * table, which Spark refuses for DataSource V2 tables: this analyzer rule replaces the resolved
 * statement with a call of the catalog's internal procedure {@code sys.analyze}, so the
 * statistics are computed and committed (an ANALYZE snapshot) by the Python table, as Paimon's
 * extension replaces it with its {@code PaimonAnalyzeTableColumnCommand}. Paimon's refusals are
 * kept: {@code PARTITION (...)} and {@code NOSCAN}. Other tables are left to Spark.
 */
public final class AnalyzeStatements extends Rule<LogicalPlan> {
  private final org.apache.spark.sql.classic.SparkSession session;

  public AnalyzeStatements(org.apache.spark.sql.SparkSession session) {
    this.session = (org.apache.spark.sql.classic.SparkSession) session;
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (plan instanceof AnalyzeTable a && ours(a.child()) != null) {
      ResolvedTable table = ours(a.child());
      String name = displayName(table);
      if (!a.partitionSpec().isEmpty()) {
        throw new UnsupportedOperationException(
            "table " + name + ": Analyze table partition is not supported (statistics describe"
                + " the whole table); drop the PARTITION clause");
      }
      if (a.noScan()) {
        throw new IllegalArgumentException(
            "table " + name + ": NOSCAN is ineffective with paimon tables (their statistics are"
                + " computed by a scan); drop NOSCAN");
      }
      return call(table, null, false);
    }
    if (plan instanceof AnalyzeColumn a && ours(a.child()) != null) {
      ResolvedTable table = ours(a.child());
      List<String> columns =
          a.columnNames().isDefined()
              ? new ArrayList<>(CollectionConverters.asJava(a.columnNames().get()))
              : null;
      return call(table, columns, a.allColumns());
    }
    return plan;
  }

  private static ResolvedTable ours(LogicalPlan child) {
    return child instanceof ResolvedTable r && r.table() instanceof LakeTable ? r : null;
  }

  private static String displayName(ResolvedTable table) {
    Identifier id = table.identifier();
    List<String> parts = new ArrayList<>(List.of(table.catalog().name()));
    parts.addAll(List.of(id.namespace()));
    parts.add(id.name());
    return String.join(".", parts);
  }

  /** The plan of {@code CALL <catalog>.sys.analyze(...)} for {@code table}, still unresolved. */
  private LogicalPlan call(ResolvedTable table, List<String> columns, boolean allColumns) {
    Identifier id = table.identifier();
    StringBuilder sql = new StringBuilder("CALL ");
    sql.append(quoted(table.catalog().name())).append(".sys.analyze(table => ");
    List<String> parts = new ArrayList<>(List.of(id.namespace()));
    parts.add(id.name());
    sql.append(literal(String.join(".", parts)));
    if (columns != null) {
      StringBuilder json = new StringBuilder("[");
      for (int i = 0; i < columns.size(); i++) {
        json.append(i == 0 ? "" : ",").append(jsonString(columns.get(i)));
      }
      sql.append(", columns => ").append(literal(json.append(']').toString()));
    }
    if (allColumns) {
      sql.append(", all_columns => true");
    }
    sql.append(')');
    try {
      return session.sessionState().sqlParser().parsePlan(sql.toString());
    } catch (ParseException e) {
      throw new IllegalStateException("stratalake: cannot plan " + sql + ": " + e.getMessage(), e);
    }
  }

  private static String quoted(String identifier) {
    return "`" + identifier.replace("`", "``") + "`";
  }

  private static String literal(String text) {
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'";
  }

  private static String jsonString(String text) {
    StringBuilder out = new StringBuilder("\"");
    for (char c : text.toCharArray()) {
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c < 0x20) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    return out.append('"').toString();
  }
}
