// For people with Maven access: `sbt package` builds the same jar as jvm-shim/build.sh, which
// compiles against the Spark jars inside the pyspark wheel instead (no Maven needed).
// The shim is Java (and one Scala class, a subclass of Spark's BatchScanExec) using Spark's internal
// Python runner API: pin the exact Spark version.

ThisBuild / organization := "org.stratalake"
ThisBuild / version := "0.1.0"
ThisBuild / scalaVersion := "2.13.18"

lazy val shim = (project in file("."))
  .settings(
    name := "stratalake-spark-shim",
    crossPaths := false,
    autoScalaLibrary := false,
    Compile / javaSource := baseDirectory.value / "jvm-shim" / "src" / "main" / "java",
    Compile / scalaSource := baseDirectory.value / "jvm-shim" / "src" / "main" / "scala",
    Compile / unmanagedSourceDirectories := Seq((Compile / javaSource).value, (Compile / scalaSource).value),
    Test / unmanagedSourceDirectories := Nil,
    javacOptions ++= Seq("--release", "17", "-encoding", "UTF-8"),
    libraryDependencies += "org.apache.spark" %% "spark-sql" % "4.3.0" % Provided,
    Compile / packageBin / artifactPath :=
      baseDirectory.value / "python" / "stratalake" / "jars" / "stratalake-spark-shim.jar"
  )
