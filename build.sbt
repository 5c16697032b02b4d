// `make jar-sbt` builds the shim with sbt: the same sources as jvm-shim/build.sh, into
// jvm-shim/target/sbt/stratalake-spark-shim.jar (the package's own jar is left alone).
//
// Spark 4.3 is not on Maven Central (only up to 4.2.0 there, and the shim needs 4.3's parser API),
// so, like build.sh, this compiles against the Spark jars inside a pyspark 4.3 wheel: those of the
// Python named by STRATALAKE_BUILD_PYTHON, or python3 on PATH. sbt itself and the Scala compiler
// come from Maven Central only (project/repositories; see the Makefile for the launcher flags).
import scala.sys.process._
import scala.util.Try

// The shim compiles against this Spark's API; the jar then runs on Spark 4.2 and 4.3.
val buildSpark = "4.3."

lazy val sparkJars: File = {
  val python = sys.env.getOrElse("STRATALAKE_BUILD_PYTHON", "python3")
  val probe = "import os, pyspark; print(pyspark.__version__, os.path.dirname(pyspark.__file__))"
  val found = Try(Seq(python, "-c", probe).!!(ProcessLogger(_ => ())).trim.split(" ", 2)).toOption
  found match {
    case Some(Array(version, dir)) if version.startsWith(buildSpark) && new File(dir, "jars").isDirectory =>
      new File(dir, "jars")
    case other =>
      val seen = other.fold("no pyspark")(parts => s"pyspark ${parts.head}")
      sys.error(
        s"build.sbt: the shim compiles against the Spark jars of pyspark ${buildSpark}x, and $python " +
          s"has $seen; set STRATALAKE_BUILD_PYTHON to a Python that has it"
      )
  }
}

// Scala's compiler must match the Scala library Spark was built with: take its version from the wheel.
lazy val sparkScala: String = {
  val ScalaLibrary = """scala-library-(2\.13\.\d+)\.jar""".r
  sparkJars.list().collectFirst { case ScalaLibrary(v) => v }.getOrElse(
    sys.error(s"build.sbt: no scala-library-2.13.*.jar in $sparkJars")
  )
}

ThisBuild / organization := "org.stratalake"
ThisBuild / version := "0.1.0"
ThisBuild / scalaVersion := sparkScala
Global / bspEnabled := false

lazy val shim = (project in file("."))
  .settings(
    name := "stratalake-spark-shim",
    crossPaths := false,
    // scala-library and Spark are on the classpath from the wheel, and provided at run time by Spark.
    autoScalaLibrary := false,
    target := baseDirectory.value / "jvm-shim" / "target" / "sbt",
    Compile / javaSource := baseDirectory.value / "jvm-shim" / "src" / "main" / "java",
    Compile / scalaSource := baseDirectory.value / "jvm-shim" / "src" / "main" / "scala",
    Compile / unmanagedSourceDirectories := Seq((Compile / javaSource).value, (Compile / scalaSource).value),
    Compile / unmanagedJars ++= (sparkJars * "*.jar").classpath,
    Compile / unmanagedResourceDirectories := Nil,
    Test / unmanagedSourceDirectories := Nil,
    javacOptions ++= Seq("--release", "17", "-encoding", "UTF-8", "-nowarn"),
    scalacOptions ++= Seq("-release", "17", "-encoding", "UTF-8", "-nowarn"),
    Compile / packageBin / artifactPath := target.value / "stratalake-spark-shim.jar"
  )
