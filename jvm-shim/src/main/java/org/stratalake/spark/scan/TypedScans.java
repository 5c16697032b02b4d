package org.stratalake.spark.scan;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.ColumnarRule;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The columnar rule that replaces every plain {@link BatchScanExec} of a stratalake scan by a
 * {@link TypedBatchScanExec}, before Spark inserts its columnar-to-row transitions (so the code
 * those transitions generate sees the vector class it names).
 */
public final class TypedScans extends ColumnarRule {
  private static final Rule<SparkPlan> RULE =
      new Rule<SparkPlan>() {
        @Override
        public SparkPlan apply(SparkPlan plan) {
          return typed(plan);
        }
      };

  /**
   * Set when this Spark's {@link BatchScanExec} does not have the constructor the shim was
   * compiled against (another Spark release): scans then keep the generic code.
   */
  private static volatile boolean unavailable;

  @Override
  public Rule<SparkPlan> preColumnarTransitions() {
    return RULE;
  }

  /**
   * The plan with its stratalake batch scans typed. Not a {@code transformUp}: a typed scan
   * compares equal to the plain one it replaces ({@code BatchScanExec.equals} compares the scan's
   * batch, filters and partitioning), and Spark's tree transforms keep the old node when the new
   * one is equal; so the path to each scan is rebuilt here node by node.
   */
  static SparkPlan typed(SparkPlan plan) {
    if (plan.getClass() == BatchScanExec.class) {
      BatchScanExec b = (BatchScanExec) plan;
      if (unavailable || !(b.scan() instanceof StrataLakeScan)) {
        return plan;
      }
      try {
        @SuppressWarnings({"rawtypes", "unchecked"})
        TypedBatchScanExec t =
            new TypedBatchScanExec(
                (scala.collection.immutable.Seq) b.output(),
                b.scan(),
                b.runtimeFilters(),
                b.ordering(),
                b.table(),
                b.keyGroupedPartitioning());
        t.copyTagsFrom(b);
        return t;
      } catch (LinkageError e) {
        unavailable = true;
        return plan;
      }
    }
    List<SparkPlan> children = CollectionConverters.asJava(plan.children());
    if (children.isEmpty()) {
      return plan;
    }
    List<SparkPlan> rebuilt = new ArrayList<>(children.size());
    boolean changed = false;
    for (SparkPlan child : children) {
      SparkPlan c = typed(child);
      changed |= c != child;
      rebuilt.add(c);
    }
    if (!changed) {
      return plan;
    }
    SparkPlan copy =
        plan.withNewChildrenInternal(CollectionConverters.asScala(rebuilt).toIndexedSeq());
    copy.copyTagsFrom(plan);
    return copy;
  }
}
