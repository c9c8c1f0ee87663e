package kafkalite.jvmtests;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Consumer-group scenarios, one per first argument; every line printed is a JSON object.
 *
 * range BOOTSTRAP TOPIC GROUP: two static members (RangeAssignor) share a 4-partition topic.
 * cooperative BOOTSTRAP TOPIC GROUP: a second member joins a CooperativeStickyAssignor group.
 * static BOOTSTRAP TOPIC GROUP: a static member leaves and comes back without a rebalance.
 * assign BOOTSTRAP TOPIC BASE_TS: manual assign, seek, offsetsForTimes, pause and resume.
 */
public class Groups {
    static final Duration POLL = Duration.ofMillis(100);
    static final long DEADLINE_MS = 60_000;

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "range": range(args[1], args[2], args[3]); break;
            case "cooperative": cooperative(args[1], args[2], args[3]); break;
            case "static": staticMembership(args[1], args[2], args[3]); break;
            case "assign": assign(args[1], args[2], Long.parseLong(args[3])); break;
            default: throw new IllegalArgumentException(args[0]);
        }
    }

    static KafkaConsumer<byte[], byte[]> consumer(String bootstrap, String group,
                                                  String instanceId, Class<?> assignor) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        if (group != null) {
            props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        if (instanceId != null) {
            props.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instanceId);
            props.put(ConsumerConfig.CLIENT_ID_CONFIG, instanceId);
        }
        if (assignor != null) {
            props.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignor.getName());
        }
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "30000");
        props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
        return new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    static KafkaProducer<byte[], byte[]> producer(String bootstrap) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        return new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
    }

    /** PER records to each of PARTITIONS partitions, keys "pN-round-i"; waits for the acks. */
    static void produce(String bootstrap, String topic, int partitions, int per, String round)
            throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = producer(bootstrap)) {
            for (int p = 0; p < partitions; p++) {
                for (int i = 0; i < per; i++) {
                    byte[] key = ("p" + p + "-" + round + "-" + i).getBytes(StandardCharsets.UTF_8);
                    producer.send(new ProducerRecord<>(topic, p, key, key)).get();
                }
            }
        }
    }

    static List<Integer> partitions(Collection<TopicPartition> tps) {
        List<Integer> out = new ArrayList<>();
        for (TopicPartition tp : tps) {
            out.add(tp.partition());
        }
        out.sort(null);
        return out;
    }

    /** Polls every consumer in turn (records into `into`, by consumer) until `done`. */
    static void pollUntil(BooleanSupplier done, Map<String, KafkaConsumer<byte[], byte[]>> consumers,
                          Map<String, List<Map<String, Object>>> into, String what) {
        long deadline = System.currentTimeMillis() + DEADLINE_MS;
        while (!done.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("timed out waiting for " + what);
            }
            for (Map.Entry<String, KafkaConsumer<byte[], byte[]>> e : consumers.entrySet()) {
                for (ConsumerRecord<byte[], byte[]> r : e.getValue().poll(POLL)) {
                    into.computeIfAbsent(e.getKey(), k -> new ArrayList<>()).add(Out.record(r));
                }
                if (!e.getValue().assignment().isEmpty()) {
                    try {
                        e.getValue().commitSync();
                    } catch (RebalanceInProgressException retried) {
                        // a cooperative rebalance is under way: the next poll completes it
                    }
                }
            }
        }
    }

    static int count(Map<String, List<Map<String, Object>>> consumed) {
        return consumed.values().stream().mapToInt(List::size).sum();
    }

    static boolean splitBetween(KafkaConsumer<?, ?> a, KafkaConsumer<?, ?> b, int total) {
        Set<TopicPartition> union = new HashSet<>(a.assignment());
        union.addAll(b.assignment());
        return !a.assignment().isEmpty() && !b.assignment().isEmpty()
            && a.assignment().size() + b.assignment().size() == total && union.size() == total
            && a.groupMetadata().generationId() == b.groupMetadata().generationId();
    }

    static void range(String bootstrap, String topic, String group) throws Exception {
        Map<String, KafkaConsumer<byte[], byte[]>> cs = new java.util.TreeMap<>();
        cs.put("a", consumer(bootstrap, group, "member-a", RangeAssignor.class));
        cs.put("b", consumer(bootstrap, group, "member-b", RangeAssignor.class));
        Map<String, List<Map<String, Object>>> consumed = new HashMap<>();
        for (KafkaConsumer<byte[], byte[]> c : cs.values()) {
            c.subscribe(List.of(topic));
        }
        pollUntil(() -> splitBetween(cs.get("a"), cs.get("b"), 4), cs, consumed, "the split");
        produce(bootstrap, topic, 4, 5, "r1");
        pollUntil(() -> count(consumed) >= 20, cs, consumed, "20 records");
        for (Map.Entry<String, KafkaConsumer<byte[], byte[]>> e : cs.entrySet()) {
            Out.emit("event", "member", "name", e.getKey(),
                     "assignment", partitions(e.getValue().assignment()),
                     "generation", e.getValue().groupMetadata().generationId(),
                     "consumed", consumed.getOrDefault(e.getKey(), List.of()));
            e.getValue().close();
        }
    }

    static ConsumerRebalanceListener recorder(String name, List<Map<String, Object>> events) {
        return new ConsumerRebalanceListener() {
            public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                events.add(Out.obj("member", name, "callback", "revoked", "partitions", partitions(tps)));
            }
            public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                events.add(Out.obj("member", name, "callback", "assigned", "partitions", partitions(tps)));
            }
            public void onPartitionsLost(Collection<TopicPartition> tps) {
                events.add(Out.obj("member", name, "callback", "lost", "partitions", partitions(tps)));
            }
        };
    }

    static void cooperative(String bootstrap, String topic, String group) throws Exception {
        List<Map<String, Object>> events = new ArrayList<>();
        KafkaConsumer<byte[], byte[]> a = consumer(bootstrap, group, null, CooperativeStickyAssignor.class);
        KafkaConsumer<byte[], byte[]> b = consumer(bootstrap, group, null, CooperativeStickyAssignor.class);
        Map<String, KafkaConsumer<byte[], byte[]>> onlyA = Map.of("a", a);
        Map<String, KafkaConsumer<byte[], byte[]>> both = new java.util.TreeMap<>(Map.of("a", a, "b", b));
        Map<String, List<Map<String, Object>>> first = new HashMap<>();
        Map<String, List<Map<String, Object>>> second = new HashMap<>();
        a.subscribe(List.of(topic), recorder("a", events));
        pollUntil(() -> a.assignment().size() == 4, onlyA, first, "a owning all 4");
        List<Integer> alone = partitions(a.assignment());
        produce(bootstrap, topic, 4, 5, "r1");
        pollUntil(() -> count(first) >= 20, onlyA, first, "round 1");
        b.subscribe(List.of(topic), recorder("b", events));
        pollUntil(() -> splitBetween(a, b, 4) && a.assignment().size() == 2, both, second,
                  "the cooperative split");
        produce(bootstrap, topic, 4, 5, "r2");
        pollUntil(() -> count(second) >= 20, both, second, "round 2");
        Out.emit("event", "result", "alone", alone, "events", events,
                 "a", partitions(a.assignment()), "b", partitions(b.assignment()),
                 "round1", first.getOrDefault("a", List.of()),
                 "round2_a", second.getOrDefault("a", List.of()),
                 "round2_b", second.getOrDefault("b", List.of()));
        a.close();
        b.close();
    }

    static void staticMembership(String bootstrap, String topic, String group) throws Exception {
        Map<String, List<Map<String, Object>>> consumed = new HashMap<>();
        KafkaConsumer<byte[], byte[]> first = consumer(bootstrap, group, "static-1", RangeAssignor.class);
        first.subscribe(List.of(topic));
        pollUntil(() -> first.assignment().size() == 2, Map.of("first", first), consumed, "first join");
        produce(bootstrap, topic, 2, 3, "r1");
        pollUntil(() -> count(consumed) >= 6, Map.of("first", first), consumed, "round 1");
        int generation1 = first.groupMetadata().generationId();
        String member1 = first.groupMetadata().memberId();
        first.close();   // a static member sends no LeaveGroup

        KafkaConsumer<byte[], byte[]> second = consumer(bootstrap, group, "static-1", RangeAssignor.class);
        second.subscribe(List.of(topic));
        pollUntil(() -> second.assignment().size() == 2, Map.of("second", second), consumed, "rejoin");
        produce(bootstrap, topic, 2, 2, "r2");
        pollUntil(() -> count(consumed) >= 10, Map.of("second", second), consumed, "round 2");
        int generation2 = second.groupMetadata().generationId();
        String member2 = second.groupMetadata().memberId();

        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        List<Map<String, Object>> members = new ArrayList<>();
        String state;
        try (Admin admin = Admin.create(props)) {
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group))
                .describedGroups().get(group).get();
            state = d.state().toString();
            for (MemberDescription m : d.members()) {
                members.add(Out.obj("member_id", m.consumerId(),
                                    "instance_id", m.groupInstanceId().orElse(null),
                                    "client_id", m.clientId(),
                                    "assignment", partitions(m.assignment().topicPartitions())));
            }
        }
        second.close();
        Out.emit("event", "result", "generation1", generation1, "generation2", generation2,
                 "member1", member1, "member2", member2, "state", state, "members", members,
                 "first", consumed.getOrDefault("first", List.of()),
                 "second", consumed.getOrDefault("second", List.of()));
    }

    static void assign(String bootstrap, String topic, long baseTs) {
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);
        try (KafkaConsumer<byte[], byte[]> c = consumer(bootstrap, null, null, null)) {
            c.assign(List.of(p0, p1));
            c.seek(p0, 3);
            c.pause(List.of(p1));
            List<Integer> paused = partitions(c.paused());
            List<Map<String, Object>> whilePaused = new ArrayList<>();
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (c.position(p0) < 10 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(POLL)) {
                    whilePaused.add(Out.record(r));
                }
            }
            long p1PositionWhilePaused = c.position(p1);
            c.resume(List.of(p1));
            List<Map<String, Object>> afterResume = new ArrayList<>();
            while (c.position(p1) < 10 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(POLL)) {
                    afterResume.add(Out.record(r));
                }
            }
            c.seekToBeginning(List.of(p0));
            long begin = c.position(p0);
            c.seekToEnd(List.of(p0));
            long end = c.position(p0);
            Map<TopicPartition, Long> query = new HashMap<>();
            query.put(p0, baseTs + 2500);
            query.put(p1, baseTs);
            Map<TopicPartition, OffsetAndTimestamp> found = c.offsetsForTimes(query);
            Map<TopicPartition, OffsetAndTimestamp> beyond =
                c.offsetsForTimes(Map.of(p0, baseTs + 1_000_000));
            Map<TopicPartition, Long> firsts = c.beginningOffsets(List.of(p0, p1));
            Map<TopicPartition, Long> lasts = c.endOffsets(List.of(p0, p1));
            Out.emit("event", "result", "paused", paused, "while_paused", whilePaused,
                     "p1_position_while_paused", p1PositionWhilePaused,
                     "after_resume", afterResume, "begin", begin, "end", end,
                     "beginning_offsets", List.of(firsts.get(p0), firsts.get(p1)),
                     "end_offsets", List.of(lasts.get(p0), lasts.get(p1)),
                     "for_time_p0", List.of(found.get(p0).offset(), found.get(p0).timestamp()),
                     "for_time_p1", List.of(found.get(p1).offset(), found.get(p1).timestamp()),
                     "for_time_beyond", beyond.get(p0) == null ? null : beyond.get(p0).offset());
        }
    }
}
