package kafkalite.jvmtests;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.TimeWindows;

/**
 * BOOTSTRAP APP_ID STATE_DIR GUARANTEE TEXT_IN COUNTS_OUT AMOUNTS_IN SUMS_OUT
 *
 * One Kafka Streams application with two sub-topologies: a word count of TEXT_IN's lines
 * (groupBy the word: a repartition topic; count into the "counts" store: a compacted changelog)
 * written to COUNTS_OUT, and per-key sums of AMOUNTS_IN's values over 10-second tumbling windows
 * (the "window-sums" window store) written to SUMS_OUT keyed "key@windowStart". Runs until its
 * stdin closes, then closes the streams; state changes and uncaught errors are JSON lines.
 */
public class StreamsApp {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[2]);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args[3]);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
        props.put(StreamsConfig.CACHE_MAX_BYTES_BUFFERING_CONFIG, "0");
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "3");
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");
        props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        props.put(StreamsConfig.producerPrefix("max.block.ms"), "10000");
        String textIn = args[4];
        String countsOut = args[5];
        String amountsIn = args[6];
        String sumsOut = args[7];

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(textIn, Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
            .filter((key, word) -> !word.isEmpty())
            .groupBy((key, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
            .count(Materialized.as("counts"))
            .toStream()
            .to(countsOut, Produced.with(Serdes.String(), Serdes.Long()));
        builder.stream(amountsIn, Consumed.with(Serdes.String(), Serdes.Long()))
            .groupByKey()
            .windowedBy(TimeWindows.of(Duration.ofSeconds(10)).grace(Duration.ofHours(1)))
            .reduce(Long::sum, Materialized.as("window-sums"))
            .toStream()
            .map((windowed, sum) -> KeyValue.pair(
                windowed.key() + "@" + windowed.window().start(), sum))
            .to(sumsOut, Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            Out.emit("event", "state", "state", now.name(), "before", before.name());
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                stopped.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(error -> {
            Out.emit("event", "uncaught", "error", error.toString(),
                     "cause", String.valueOf(error.getCause()));
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
                while (in.readLine() != null) {
                    // until EOF
                }
            } catch (Exception e) {
                // closing anyway
            }
            stopped.countDown();
        });
        stdin.setDaemon(true);
        stdin.start();
        stopped.await();
        boolean closed = streams.close(Duration.ofSeconds(30));
        Out.emit("event", "closed", "clean", closed, "state", streams.state().name());
        System.exit(streams.state() == KafkaStreams.State.NOT_RUNNING ? 0 : 1);
    }
}
