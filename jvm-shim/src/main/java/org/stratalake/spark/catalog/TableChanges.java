package org.stratalake.spark.catalog;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.stratalake.spark.bridge.Json;
import org.stratalake.spark.bridge.PythonBridge;

/** Spark's ALTER TABLE changes as JSON for the Python catalog (which validates them). */
public final class TableChanges {
  private TableChanges() {}

  static ObjectNode toJson(TableChange change) {
    ObjectNode out = PythonBridge.JSON.createObjectNode();
    if (change instanceof TableChange.SetProperty) {
      TableChange.SetProperty c = (TableChange.SetProperty) change;
      out.put("kind", "set_property").put("key", c.property()).put("value", c.value());
    } else if (change instanceof TableChange.RemoveProperty) {
      out.put("kind", "remove_property")
          .put("key", ((TableChange.RemoveProperty) change).property());
    } else if (change instanceof TableChange.AddColumn) {
      TableChange.AddColumn c = (TableChange.AddColumn) change;
      if (c.position() != null) {
        throw unsupported("ADD COLUMN ... FIRST/AFTER");
      }
      if (c.defaultValue() != null) {
        throw unsupported("column DEFAULT values");
      }
      names(out.put("kind", "add_column"), c.fieldNames());
      out.set("type", Json.readTree(c.dataType().json()));
      out.put("nullable", c.isNullable()).put("comment", c.comment());
    } else if (change instanceof TableChange.RenameColumn) {
      TableChange.RenameColumn c = (TableChange.RenameColumn) change;
      names(out.put("kind", "rename_column"), c.fieldNames()).put("new_name", c.newName());
    } else if (change instanceof TableChange.DeleteColumn) {
      TableChange.DeleteColumn c = (TableChange.DeleteColumn) change;
      names(out.put("kind", "drop_column"), c.fieldNames())
          .put("if_exists", Boolean.TRUE.equals(c.ifExists()));
    } else if (change instanceof TableChange.UpdateColumnType) {
      TableChange.UpdateColumnType c = (TableChange.UpdateColumnType) change;
      names(out.put("kind", "update_column_type"), c.fieldNames());
      out.set("type", Json.readTree(c.newDataType().json()));
    } else if (change instanceof TableChange.UpdateColumnComment) {
      TableChange.UpdateColumnComment c = (TableChange.UpdateColumnComment) change;
      names(out.put("kind", "update_column_comment"), c.fieldNames())
          .put("comment", c.newComment());
    } else if (change instanceof TableChange.UpdateColumnNullability) {
      TableChange.UpdateColumnNullability c = (TableChange.UpdateColumnNullability) change;
      names(out.put("kind", "update_column_nullability"), c.fieldNames())
          .put("nullable", c.nullable());
    } else {
      throw unsupported(change.getClass().getSimpleName());
    }
    return out;
  }

  private static ObjectNode names(ObjectNode out, String[] fieldNames) {
    ArrayNode arr = out.putArray("field_names");
    for (String n : fieldNames) {
      arr.add(n);
    }
    return out;
  }

  private static UnsupportedOperationException unsupported(String what) {
    return new UnsupportedOperationException(
        "stratalake: ALTER TABLE with " + what + " is not supported");
  }
}
