"""A streaming query run as its own process, so a test can kill -9 it mid-stream.

    python stream_job.py BOOTSTRAP TOPIC OUTPUT_DIR CHECKPOINT_DIR MAX_OFFSETS_PER_TRIGGER

Reads TOPIC from the earliest offset in micro-batches of at most MAX_OFFSETS_PER_TRIGGER records
(back to back) and appends (topic, partition, offset, value) to Parquet files in OUTPUT_DIR, until
killed.
"""

import sys

from spark_integration.session import spark_session


def main(bootstrap, topic, output_dir, checkpoint_dir, max_per_trigger):
    spark = spark_session("kafkalite-stream-job", "local[2]", log_level="ERROR")
    df = (spark.readStream.format("kafkalite")
          .option("kafkalite.bootstrap.servers", bootstrap)
          .option("subscribe", topic)
          .option("startingOffsets", "earliest")
          .option("maxOffsetsPerTrigger", max_per_trigger)
          .load())
    query = (df.selectExpr("topic", "partition", "offset", "CAST(value AS STRING) AS value")
             .writeStream.format("parquet")
             .option("path", output_dir)
             .option("checkpointLocation", checkpoint_dir)
             .trigger(processingTime="0 seconds")
             .start())
    print("started", flush=True)
    query.awaitTermination()


if __name__ == "__main__":
    main(*sys.argv[1:6])
