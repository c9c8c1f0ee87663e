package kafkalite.jvmtests;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java client's transactions (KIP-98, KIP-447).
 *
 * produce BOOTSTRAP TOPIC TXN_ID TRANSACTIONS PER_TXN: one transactional producer; transaction t
 * sends PER_TXN records ("t{t}-r{i}" to partition i mod the topic's partitions) and commits when
 * t is even, aborts when odd. Prints each record's RecordMetadata ("sent", with "txn" and
 * "outcome") and each ending ("ended").
 *
 * consume BOOTSTRAP TOPIC ISOLATION: an assigned consumer (read_committed or read_uncommitted)
 * reads every partition from the beginning up to its end offset (the LSO for read_committed)
 * and prints each record ("consumed"), then the end offsets ("done").
 *
 * copy BOOTSTRAP IN OUT GROUP TXN_ID COUNT: consume-transform-produce: a read_committed consumer
 * of group GROUP subscribed to IN, a transactional producer writing each value upper-cased to
 * OUT (same partition) with the consumer's offsets sent to the transaction
 * (sendOffsetsToTransaction with the consumer's group metadata). The first transaction with
 * records is aborted and the consumer rewound to the committed offsets; the rest commit, until
 * COUNT records are copied. Prints "aborted" and "committed" lines with the offsets sent.
 */
public class Transactions {
    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "produce":
                produce(args[1], args[2], args[3], Integer.parseInt(args[4]),
                        Integer.parseInt(args[5]));
                break;
            case "consume":
                consume(args[1], args[2], args[3]);
                break;
            default:
                copy(args[1], args[2], args[3], args[4], args[5], Integer.parseInt(args[6]));
        }
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static KafkaProducer<byte[], byte[]> producer(String bootstrap, String txnId) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        props.put(ProducerConfig.CLIENT_ID_CONFIG, "jvm-txn-" + txnId);
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "60000");
        return new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
    }

    static void produce(String bootstrap, String topic, String txnId, int transactions,
                        int perTxn) throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = producer(bootstrap, txnId)) {
            int partitions = producer.partitionsFor(topic).size();
            producer.initTransactions();
            for (int t = 0; t < transactions; t++) {
                boolean commit = t % 2 == 0;
                producer.beginTransaction();
                List<Future<RecordMetadata>> futures = new ArrayList<>();
                List<String> values = new ArrayList<>();
                for (int i = 0; i < perTxn; i++) {
                    String value = "t" + t + "-r" + i;
                    values.add(value);
                    futures.add(producer.send(new ProducerRecord<>(
                        topic, i % partitions, utf8("k" + i), utf8(value))));
                }
                producer.flush();
                for (int i = 0; i < perTxn; i++) {
                    RecordMetadata md = futures.get(i).get();
                    Out.emit("event", "sent", "txn", t, "outcome", commit ? "commit" : "abort",
                             "partition", md.partition(), "offset", md.offset(),
                             "value", values.get(i));
                }
                if (commit) {
                    producer.commitTransaction();
                } else {
                    producer.abortTransaction();
                }
                Out.emit("event", "ended", "txn", t, "outcome", commit ? "commit" : "abort");
            }
        }
    }

    static KafkaConsumer<byte[], byte[]> consumer(String bootstrap, String group,
                                                  String isolation) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        if (group != null) {
            props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        return new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    static void consume(String bootstrap, String topic, String isolation) {
        try (KafkaConsumer<byte[], byte[]> consumer = consumer(bootstrap, null, isolation)) {
            List<TopicPartition> parts = new ArrayList<>();
            for (PartitionInfo p : consumer.partitionsFor(topic)) {
                parts.add(new TopicPartition(topic, p.partition()));
            }
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            // the consumer's own isolation level: the LSO for read_committed
            Map<TopicPartition, Long> ends = consumer.endOffsets(parts);
            long deadline = System.currentTimeMillis() + 60_000;
            while (!reached(consumer, ends)) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("end offsets " + ends + " not reached");
                }
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    Out.emit("event", "consumed", "record", Out.record(r));
                }
            }
            Map<String, Long> byPartition = new HashMap<>();
            ends.forEach((tp, offset) -> byPartition.put(String.valueOf(tp.partition()), offset));
            Out.emit("event", "done", "end_offsets", byPartition);
        }
    }

    static boolean reached(KafkaConsumer<byte[], byte[]> consumer,
                           Map<TopicPartition, Long> ends) {
        for (Map.Entry<TopicPartition, Long> end : ends.entrySet()) {
            if (consumer.position(end.getKey()) < end.getValue()) {
                return false;
            }
        }
        return true;
    }

    static void copy(String bootstrap, String in, String out, String group, String txnId,
                     int count) {
        try (KafkaConsumer<byte[], byte[]> consumer = consumer(bootstrap, group, "read_committed");
             KafkaProducer<byte[], byte[]> producer = producer(bootstrap, txnId)) {
            producer.initTransactions();
            consumer.subscribe(List.of(in));
            boolean abortedOne = false;
            int copied = 0;
            long deadline = System.currentTimeMillis() + 90_000;
            while (copied < count) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("copied " + copied + " of " + count);
                }
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) {
                    continue;
                }
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    String upper = new String(r.value(), StandardCharsets.UTF_8).toUpperCase();
                    producer.send(new ProducerRecord<>(out, r.partition(), r.key(), utf8(upper)));
                    offsets.put(new TopicPartition(r.topic(), r.partition()),
                                new OffsetAndMetadata(r.offset() + 1));
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                Map<String, Long> sent = new HashMap<>();
                offsets.forEach((tp, o) -> sent.put(String.valueOf(tp.partition()), o.offset()));
                if (!abortedOne) {
                    // the copies go to the log first: the abort then has records to abort
                    // (abortTransaction alone may drop batches not sent yet)
                    producer.flush();
                    producer.abortTransaction();
                    abortedOne = true;
                    // back to the group's committed offsets (none yet: the beginning)
                    for (TopicPartition tp : consumer.assignment()) {
                        OffsetAndMetadata committed = consumer.committed(java.util.Set.of(tp))
                            .get(tp);
                        if (committed == null) {
                            consumer.seekToBeginning(List.of(tp));
                        } else {
                            consumer.seek(tp, committed.offset());
                        }
                    }
                    Out.emit("event", "aborted", "records", records.count(), "offsets", sent);
                    continue;
                }
                producer.commitTransaction();
                copied += records.count();
                Out.emit("event", "committed", "records", records.count(), "offsets", sent);
            }
            Out.emit("event", "done", "copied", copied);
        }
    }
}
