package kafkalite.jvmtests;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * all BOOTSTRAP PREFIX BASE_TS: the Java AdminClient's calls in turn, each printing a JSON line
 * ("step" names the call) for the test to check.
 */
public class AdminOps {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[1];
        String prefix = args[2];
        long baseTs = Long.parseLong(args[3]);
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            run(admin, bootstrap, prefix, baseTs);
        }
    }

    static String errorName(ExecutionException e) {
        return e.getCause().getClass().getSimpleName();
    }

    static void run(Admin admin, String bootstrap, String prefix, long baseTs) throws Exception {
        DescribeClusterResult cluster = admin.describeCluster();
        List<Integer> ids = new ArrayList<>();
        for (Node n : cluster.nodes().get()) {
            ids.add(n.id());
        }
        ids.sort(null);
        Out.emit("step", "describeCluster", "nodes", ids,
                 "controller", cluster.controller().get().id(),
                 "cluster_id", cluster.clusterId().get());

        String topic = prefix + "-main";
        String compacted = prefix + "-compacted";
        NewTopic main = new NewTopic(topic, 2, (short) 3)
            .configs(Map.of("retention.ms", "3600000", "max.message.bytes", "200000"));
        NewTopic comp = new NewTopic(compacted, 1, (short) 2)
            .configs(Map.of("cleanup.policy", "compact", "min.cleanable.dirty.ratio", "0.2"));
        admin.createTopics(List.of(main, comp)).all().get();
        String again;
        try {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
            again = "created";
        } catch (ExecutionException e) {
            again = errorName(e);
        }
        Out.emit("step", "createTopics", "again", again);

        Map<String, Object> configs = new TreeMap<>();
        ConfigResource topicRes = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        ConfigResource compRes = new ConfigResource(ConfigResource.Type.TOPIC, compacted);
        Map<ConfigResource, Config> described =
            admin.describeConfigs(List.of(topicRes, compRes)).all().get();
        for (Map.Entry<ConfigResource, Config> e : described.entrySet()) {
            for (ConfigEntry c : e.getValue().entries()) {
                if (Set.of("retention.ms", "max.message.bytes", "cleanup.policy",
                           "min.cleanable.dirty.ratio", "min.insync.replicas", "segment.bytes")
                        .contains(c.name())) {
                    configs.put(e.getKey().name().substring(prefix.length() + 1) + "/" + c.name(),
                                List.of(c.value(), c.source().name(), c.isReadOnly()));
                }
            }
        }
        Out.emit("step", "describeConfigs", "configs", configs);

        admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(4))).all().get();
        String shrink;
        try {
            admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(3))).all().get();
            shrink = "done";
        } catch (ExecutionException e) {
            shrink = errorName(e);
        }
        int partitions = 0;
        long deadline = System.currentTimeMillis() + 30_000;
        while (System.currentTimeMillis() < deadline) {
            TopicDescription d = admin.describeTopics(List.of(topic)).all().get().get(topic);
            partitions = d.partitions().size();
            if (partitions == 4 && d.partitions().stream().allMatch(p -> p.leader() != null)) {
                break;
            }
            Thread.sleep(50);
        }
        Out.emit("step", "createPartitions", "partitions", partitions, "shrink", shrink);

        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        try (KafkaProducer<byte[], byte[]> producer =
                 new KafkaProducer<>(pp, new ByteArraySerializer(), new ByteArraySerializer())) {
            for (int i = 0; i < 10; i++) {
                byte[] v = ("v" + i).getBytes(StandardCharsets.UTF_8);
                producer.send(new ProducerRecord<>(topic, 0, baseTs + i * 1000L, null, v)).get();
            }
            producer.send(new ProducerRecord<>(topic, 3, baseTs, null, new byte[1])).get();
        }
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p3 = new TopicPartition(topic, 3);
        Out.emit("step", "listOffsets",
                 "earliest", offset(admin, p0, OffsetSpec.earliest()),
                 "latest", offset(admin, p0, OffsetSpec.latest()),
                 "for_time", offset(admin, p0, OffsetSpec.forTimestamp(baseTs + 4500)),
                 "for_time_beyond", offset(admin, p0, OffsetSpec.forTimestamp(baseTs + 99_000)),
                 "latest_p3", offset(admin, p3, OffsetSpec.latest()));

        long low = admin.deleteRecords(Map.of(p0, RecordsToDelete.beforeOffset(4)))
            .lowWatermarks().get(p0).get().lowWatermark();
        String beyondEnd;
        try {
            admin.deleteRecords(Map.of(p0, RecordsToDelete.beforeOffset(50))).all().get();
            beyondEnd = "done";
        } catch (ExecutionException e) {
            beyondEnd = errorName(e);
        }
        Out.emit("step", "deleteRecords", "low_watermark", low,
                 "earliest", offset(admin, p0, OffsetSpec.earliest()), "beyond_end", beyondEnd);

        String group = prefix + "-group";
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        cp.put(ConsumerConfig.CLIENT_ID_CONFIG, "admin-test-consumer");
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        KafkaConsumer<byte[], byte[]> consumer =
            new KafkaConsumer<>(cp, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        consumer.subscribe(List.of(topic));
        int seen = 0;
        deadline = System.currentTimeMillis() + 60_000;
        while (seen < 7 && System.currentTimeMillis() < deadline) {
            seen += consumer.poll(Duration.ofMillis(100)).count();
        }
        consumer.commitSync(Map.of(p0, new OffsetAndMetadata(8, "meta")));
        consumer.commitSync(Map.of(p3, new OffsetAndMetadata(1)));

        List<Map<String, Object>> listed = new ArrayList<>();
        for (ConsumerGroupListing g : admin.listConsumerGroups().all().get()) {
            if (g.groupId().equals(group)) {
                listed.add(Out.obj("group", g.groupId(), "simple", g.isSimpleConsumerGroup(),
                                   "state", g.state().map(Object::toString).orElse(null)));
            }
        }
        Out.emit("step", "listConsumerGroups", "consumed", seen, "listed", listed);
        Out.emit("step", "describeConsumerGroups", "active", describe(admin, group));
        Map<String, Object> committed = new TreeMap<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e :
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().entrySet()) {
            committed.put(String.valueOf(e.getKey().partition()),
                          List.of(e.getValue().offset(), e.getValue().metadata()));
        }
        consumer.close();
        Out.emit("step", "listConsumerGroupOffsets", "committed", committed,
                 "after_close", describe(admin, group));

        admin.deleteConsumerGroups(List.of(group)).all().get();
        boolean stillListed = false;
        for (ConsumerGroupListing g : admin.listConsumerGroups().all().get()) {
            stillListed |= g.groupId().equals(group);
        }
        Out.emit("step", "deleteConsumerGroups", "still_listed", stillListed);

        admin.deleteTopics(List.of(topic, compacted)).all().get();
        Set<String> left = null;
        deadline = System.currentTimeMillis() + 30_000;
        while (System.currentTimeMillis() < deadline) {
            left = new java.util.TreeSet<>(admin.listTopics().names().get());
            left.removeIf(name -> !name.startsWith(prefix));
            if (left.isEmpty()) {
                break;
            }
            Thread.sleep(50);
        }
        String describeDeleted;
        try {
            admin.describeTopics(List.of(topic)).all().get();
            describeDeleted = "found";
        } catch (ExecutionException e) {
            describeDeleted = errorName(e);
        }
        Out.emit("step", "deleteTopics", "left", left, "describe_deleted", describeDeleted);
    }

    static Long offset(Admin admin, TopicPartition tp, OffsetSpec spec) throws Exception {
        ListOffsetsResult.ListOffsetsResultInfo info =
            admin.listOffsets(Map.of(tp, spec)).partitionResult(tp).get();
        return info.offset();
    }

    static Map<String, Object> describe(Admin admin, String group) throws Exception {
        ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group))
            .describedGroups().get(group).get();
        List<Map<String, Object>> members = new ArrayList<>();
        for (MemberDescription m : d.members()) {
            List<Integer> ps = new ArrayList<>();
            for (TopicPartition tp : m.assignment().topicPartitions()) {
                ps.add(tp.partition());
            }
            ps.sort(null);
            members.add(Out.obj("client_id", m.clientId(), "assignment", ps,
                                "instance_id", m.groupInstanceId().orElse(null)));
        }
        return Out.obj("state", d.state().toString(), "assignor", d.partitionAssignor(),
                       "simple", d.isSimpleConsumerGroup(), "members", members,
                       "coordinator_known", d.coordinator() != null && d.coordinator().id() >= 0);
    }
}
