"""``metalog shell``'s tree and commands against kafka-metadata-shell's, on Kafka's KIP-858 files.

The expected tree follows Kafka's node classes (metadata/src/main/java/org/apache/kafka/image/node/, named in
each test) over the state the files hold; the verbs' output and errors follow
shell/src/main/java/org/apache/kafka/shell/command/.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path
from typing import Any

import pytest

from metalog.codec import Uuid, message_class, struct_class
from metalog.replay.history import MetadataHistory
from metalog.replay.shell import MetadataShell, glob_regex
from metalog.replay.shell_syntax import split_commands
from metalog.replay.shell_tree import Provenance, iso_zoned, java_double, root, version_range
from metalog.state import MetadataDelta
from metalog.state.image import EMPTY

FOO = "UXyU9i5ARn6W00ON2taeWA"


@pytest.fixture
def shell(jbod_dir: Path) -> Any:
    with MetadataHistory(jbod_dir) as h:
        yield MetadataShell(h, h.state_at())


def run(shell: MetadataShell, line: str, width: int | None = None) -> tuple[bool, str, str]:
    out, err = io.StringIO(), io.StringIO()
    ok = shell.run(line, out, err, width=width)
    return ok, out.getvalue(), err.getvalue()


def lines(shell: MetadataShell, line: str) -> list[str]:
    ok, out, err = run(shell, line)
    assert ok and not err, err
    return out.splitlines()


def test_root_holds_local_and_image(shell) -> None:
    # RootShellNode: LocalShellNode.NAME and MetadataImageNode.NAME
    assert lines(shell, "ls /") == ["image", "local"]
    assert lines(shell, "ls /local") == ["commitId", "version"]


def test_image_children_as_metadata_image_node_names_them(shell) -> None:
    # MetadataImageNode.CHILDREN: ProvenanceNode, FeaturesImageNode, ClusterImageNode, TopicsImageNode,
    # ConfigurationsImageNode, ClientQuotasImageNode, ProducerIdsImageNode, AclsImageNode (as AclsImageByIdNode),
    # ScramImageNode, DelegationTokenImageNode
    assert lines(shell, "ls /image") == ["acls", "clientQuotas", "cluster", "configs", "delegationToken", "features",
                                         "producerIds", "provenance", "scram", "topics"]


def test_provenance_offset_epoch_and_zoned_time(shell) -> None:
    # ProvenanceNode: the last offset of the state, its batch's epoch, ISO_ZONED_DATE_TIME at UTC
    assert lines(shell, "cat /image/provenance") == ["offset 24, epoch 1, time 2023-11-14T22:13:28Z[UTC]"]


def test_features(shell) -> None:
    # FeaturesImageNode: metadataVersion (MetadataVersion.toString), zkMigrationState, finalized_<name> (none here)
    assert lines(shell, "tree /image/features") == ["metadataVersion:", "  3.7-IV2", "zkMigrationState:", "  NONE"]


def test_brokers_print_broker_registration_to_string(shell) -> None:
    # ClusterImageBrokersNode -> BrokerRegistration.toString (listeners sorted by name, Endpoint.toString,
    # VersionRange.toString, rack as an Optional, directories as a List)
    assert lines(shell, "ls /image/cluster") == ["brokers", "controllers"]
    assert lines(shell, "ls /image/cluster/brokers") == ["1", "2", "3"]
    assert lines(shell, "cat /image/cluster/brokers/1") == [
        "BrokerRegistration(id=1, epoch=10, incarnationId=EREREREREREAAAAAAAAAAQ, listeners=[Endpoint("
        "listenerName='PLAINTEXT', securityProtocol=PLAINTEXT, host='broker1', port=9092)], "
        "supportedFeatures={metadata.version: 1-17}, rack=Optional[rack-a], fenced=false, "
        "inControlledShutdown=false, isMigratingZkBroker=false, directories=[upjfkCrUR9GNn1i94ip1wg])"]
    assert "rack=Optional.empty, fenced=true, inControlledShutdown=true" in lines(shell,
                                                                                 "cat /image/cluster/brokers/3")[0]
    assert lines(shell, "ls /image/cluster/controllers") == []


def test_topics_by_name_and_by_id(shell) -> None:
    # TopicsImageNode (byName, byId), TopicImageNode (name, id, each partition's PartitionRegistration.toString)
    assert lines(shell, "ls /image/topics") == ["byId", "byName"]
    assert lines(shell, "ls /image/topics/byName") == ["foo"]  # bar was removed at offset 21
    assert lines(shell, "ls /image/topics/byName/foo") == ["0", "1", "id", "name"]
    assert lines(shell, f"ls /image/topics/byId/{FOO}") == ["0", "1", "id", "name"]
    assert lines(shell, "cat /image/topics/byName/foo/id /image/topics/byName/foo/name") == [FOO, "foo"]
    assert lines(shell, "cat /image/topics/byName/foo/0") == [
        "PartitionRegistration(replicas=[1, 2, 3], directories=[bCF3l0RIQjOKhUqgbivHZA, Fg3mFhcVQlqCWRk4dZazxw, "
        "bv9TEYi4TqOm52hLmrxT5w], isr=[2, 3], removingReplicas=[], addingReplicas=[], elr=[], lastKnownElr=[], "
        "leader=2, leaderRecoveryState=RECOVERED, leaderEpoch=1, partitionEpoch=2)"]


def test_configs_named_type_colon_name(shell) -> None:
    # ConfigurationsImageNode: TYPE:name (TYPE alone for a default resource); ConfigurationImageNode: the values
    assert lines(shell, "ls /image/configs") == ["TOPIC:foo"]
    assert lines(shell, "cat /image/configs/TOPIC:foo/min.insync.replicas") == ["2"]


def test_empty_domains(shell) -> None:
    # ProducerIdsImage.EMPTY's nextProducerId is -1; ScramImageNode lists every known mechanism, users or not
    assert lines(shell, "cat /image/producerIds/nextProducerId") == ["-1"]
    assert lines(shell, "ls /image/scram") == ["SCRAM-SHA-256", "SCRAM-SHA-512"]
    for node in ("acls", "clientQuotas", "delegationToken", "scram/SCRAM-SHA-256"):
        assert lines(shell, f"ls /image/{node}") == []


def test_at_moves_in_time_and_says_which_state_it_shows(shell) -> None:
    assert lines(shell, "at 20") == ["offset 20 at 2023-11-14T22:13:27.000Z"]
    assert lines(shell, "ls /image/topics/byName") == ["bar", "foo"]
    assert lines(shell, "ls /image/configs") == ["TOPIC:bar", "TOPIC:foo"]
    assert lines(shell, "at 15") == ["offset 14 at 2023-11-14T22:13:25.000Z",
                                     "offset 15 is inside batch 15..16; the state shown is the one published at 14"]
    assert lines(shell, "cat /image/provenance") == ["offset 14, epoch 1, time 2023-11-14T22:13:25Z[UTC]"]
    assert lines(shell, "at 2023-11-14T22:13:21.5Z") == ["offset 2 at 2023-11-14T22:13:21.000Z"]
    assert lines(shell, "at 1700000003000ms") == ["offset 8 at 2023-11-14T22:13:23.000Z"]
    assert lines(shell, "at end") == ["offset 24 at 2023-11-14T22:13:28.000Z"]
    # the LeaderChange control batch at offset 0 publishes the empty state (Kafka's loader publishes at every
    # batch end, control batches too)
    assert lines(shell, "at 0") == ["offset 0 at 2023-11-14T22:13:20.000Z"]
    assert lines(shell, "ls /image/cluster/brokers") == [] and lines(shell, "cat /image/features/metadataVersion") \
        == ["none"]


def test_at_leaves_a_working_directory_that_is_gone(shell) -> None:
    lines(shell, "cd /image/topics/byName/foo")
    assert lines(shell, "at 8")[0] == "/image/topics/byName/foo is not in this state: now in /image/topics/byName"
    assert lines(shell, "pwd") == ["/image/topics/byName"]


def test_at_a_point_kafka_never_published_is_an_error(shell) -> None:
    ok, out, err = run(shell, "at -1")
    assert not ok and err == "at: offset -1 is before the log: Kafka's loader published no state there\n"
    ok, _, err = run(shell, "at 99")
    assert not ok and err == "at: offset 99 is past the end of the log (last offset 24)\n"
    assert lines(shell, "at") == ["offset 24 at 2023-11-14T22:13:28.000Z"]  # still where it was


def test_cd_pwd_relative_paths_dot_and_dotdot(shell) -> None:
    lines(shell, "cd image/topics")
    assert lines(shell, "pwd") == ["/image/topics"]
    assert lines(shell, "ls byName/foo/../foo/./0") == ["0"]
    lines(shell, "cd ..//cluster/")
    assert lines(shell, "pwd") == ["/image/cluster"]
    lines(shell, "cd")
    assert lines(shell, "pwd") == ["/"]


def test_kafkas_error_lines(shell) -> None:
    # LsCommandHandler, CatCommandHandler, TreeCommandHandler, FindCommandHandler, CdCommandHandler
    assert run(shell, "ls /nope") == (False, "", "ls: /nope: no such file or directory.\n")
    assert run(shell, "cat /nope") == (False, "", "cat: /nope: No such file or directory.\n")
    assert run(shell, "cat /image") == (False, "", "cat: /image: Is a directory\n")
    assert run(shell, "tree /nope") == (False, "", "tree: /nope: No such file or directory.\n")
    assert run(shell, "find /nope") == (False, "", "find: /nope: no such file or directory.\n")
    assert run(shell, "cd /nope") == (False, "", "cd: /nope: no such directory.\n")
    assert run(shell, "cd /image/provenance") == (False, "", "cd: /image/provenance: not a directory.\n")
    assert run(shell, "man nope") == (False, "", "man: unknown command nope. Type help to get a list of commands.\n")
    assert run(shell, "frob") == (False, "", "frob: unknown command. Type help to get a list of commands.\n")


def test_ls_of_a_file_and_of_several_directories(shell) -> None:
    # LsCommandHandler.printTargets: files first, then each directory under "name:", a blank line between
    assert lines(shell, "ls /image/provenance /image/cluster /image/topics") == [
        "provenance", "", "cluster:", "brokers", "controllers", "", "topics:", "byId", "byName"]
    assert lines(shell, "ls /image/cluster /image/topics") == [
        "cluster:", "brokers", "controllers", "", "topics:", "byId", "byName"]


def test_ls_in_columns_on_a_screen(shell) -> None:
    # LsCommandHandler.calculateColumnSchema: the most columns that fit the width, filled column by column
    _, out, _ = run(shell, "ls /image", width=80)
    assert out.splitlines() == ["acls          cluster  delegationToken  producerIds  scram",
                                "clientQuotas  configs  features         provenance   topics"]
    _, out, _ = run(shell, "ls /image", width=20)
    assert out.splitlines()[0] == "acls"


def test_find_lists_every_path_below(shell) -> None:
    assert lines(shell, "find /image/cluster") == [
        "/image/cluster", "/image/cluster/brokers", "/image/cluster/brokers/1", "/image/cluster/brokers/2",
        "/image/cluster/brokers/3", "/image/cluster/controllers"]
    lines(shell, "cd /image")
    assert lines(shell, "find configs") == ["configs", "configs/TOPIC:foo", "configs/TOPIC:foo/min.insync.replicas"]


def test_globs(shell) -> None:
    assert lines(shell, "ls /image/cluster/brokers/[12]") == ["1", "2"]
    assert len(lines(shell, "cat /image/cluster/brokers/*")) == 3
    assert lines(shell, "cat /image/topics/by*/*/name") == ["foo", "foo"]  # byId/<id>/name, byName/foo/name
    assert lines(shell, "cat /image/topics/byName/foo/{id,name}") == [FOO, "foo"]
    assert lines(shell, "find /image/configs/T?PIC:*") == ["/image/configs/TOPIC:foo",
                                                            "/image/configs/TOPIC:foo/min.insync.replicas"]


@pytest.mark.parametrize(("glob", "matches", "misses"), [
    # GlobComponent.toRegularExpression
    ("*", ["", "abc"], []), ("a?c", ["abc", "aXc"], ["ac", "abbc"]), ("{foo,bar}", ["foo", "bar"], ["baz"]),
    ("[ab]x", ["ax", "bx"], ["cx"]), ("[!ab]x", ["cx"], ["ax"]), ("a.b", [], []), ("\\*", [], []),
])
def test_glob_components(glob: str, matches: list[str], misses: list[str]) -> None:
    assert_glob(glob, matches, misses)


def assert_glob(glob: str, matches: list[str], misses: list[str]) -> None:
    """No matches and no misses: the glob is a literal."""
    regex = glob_regex(glob)
    if not matches and not misses:
        assert regex is None  # a literal
        return
    assert regex is not None
    assert all(regex.fullmatch(m) for m in matches) and not any(regex.fullmatch(m) for m in misses)


@pytest.mark.parametrize(("glob", "matches", "misses"), [
    ("[[a]", [], []),  # Java: a class nested in one left unclosed, malformed: Kafka takes it literally
    ("[a[b]x", [], []), ("[a&&b]", [], []),  # a nested class, an intersection: taken literally
    ("[a||b]", ["a", "|", "b"], ["||"]), ("[~~]", ["~"], ["~~"]), ("[+--]", ["+", ",", "-"], ["a"]),
    ("[\\[a]", ["[", "a"], ["b"]),  # an escaped bracket is a character
])
def test_a_character_class_is_read_as_java_reads_it_and_warns_nothing(glob: str, matches: list[str],
                                                                       misses: list[str]) -> None:
    """Python's re read these with a FutureWarning on stderr (a nested set, a set operation to come)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_glob(glob, matches, misses)


def test_history_of_a_node(shell) -> None:
    out = lines(shell, "history /image/topics/byName/foo/0")
    assert out[0].split() == ["OFFSET", "TIME", "RECORD", "WHAT", "CHANGE"]
    assert out[4].split() == ["16", "2023-11-14T22:13:26.000Z", "PARTITION_CHANGE_RECORD@15", "foo-0", "isr",
                              "[1,2,3]", "->", "[2,3]"]
    # a node that is not in the state shown has a history all the same
    bar = lines(shell, "history /image/topics/byName/bar")
    assert [line.split()[0] for line in bar[1:]] == ["20", "20", "20", "24", "24", "24"]
    assert lines(shell, "history /image/producerIds") == ["no committed change"]
    ok, _, err = run(shell, "history /image/provenance")
    assert not ok and err == "history: /image/provenance: changes at every published point (see 'at')\n"


def test_history_of_the_commands_typed(shell) -> None:
    lines(shell, "pwd")
    lines(shell, "ls")
    assert lines(shell, "history") == ["    1  pwd", "    2  ls", "    3  history"]
    assert lines(shell, "history 1") == ["    4  history 1"]


def test_completion_of_commands_and_paths(shell) -> None:
    # CommandUtils.completeCommand and completePath: a directory's candidate ends with "/"
    assert shell.complete("h", "h") == ["help", "history"]
    assert shell.complete("ls /im", "/im") == ["/image/"]
    assert shell.complete("cat /image/cluster/brokers/", "/image/cluster/brokers/") == [
        "/image/cluster/brokers/1", "/image/cluster/brokers/2", "/image/cluster/brokers/3"]
    lines(shell, "cd /image")
    assert shell.complete("ls to", "to") == ["topics/"]
    assert shell.complete("man l", "l") == ["ls"]


def test_split_commands_at_semicolons_outside_quotes() -> None:
    assert split_commands("ls; cd /a ;pwd") == ["ls", "cd /a", "pwd"]
    assert split_commands("cat 'a;b'; ls") == ["cat 'a;b'", "ls"]
    assert split_commands(" ; ") == []


# ---- the leaves of the other domains, over a state that has them -------------------------------------------------
def _image_with_everything() -> Any:
    def rec(message: str, /, **fields: Any) -> Any:
        return message_class(message)(**fields)

    entity = struct_class("ClientQuotaRecord", "EntityData")
    endpoint = struct_class("RegisterControllerRecord", "ControllerEndpoint")
    feature = struct_class("RegisterControllerRecord", "ControllerFeature")
    delta = MetadataDelta(EMPTY)
    for r in [
        rec("AccessControlEntryRecord", id=Uuid.of(1, 1), resource_type=2, resource_name="foo", pattern_type=4,
            principal="User:alice", host="*", operation=4, permission_type=2),
        rec("ClientQuotaRecord", entity=[entity(entity_type="user", entity_name="alice"),
                                         entity(entity_type="client-id", entity_name=None)],
            key="producer_byte_rate", value=10000000.0, remove=False),
        rec("UserScramCredentialRecord", name="alice", mechanism=1, salt=b"s", stored_key=b"k", server_key=b"v",
            iterations=4096),
        rec("DelegationTokenRecord", owner="User:alice", requester="User:bob", renewers=[], issue_timestamp=1,
            max_timestamp=2, expiration_timestamp=3, token_id="tok"),
        rec("RegisterControllerRecord", controller_id=3000, incarnation_id=Uuid.of(5, 5), zk_migration_ready=False,
            end_points=[endpoint(name="CONTROLLER", host="c", port=9093, security_protocol=0)],
            features=[feature(name="kraft.version", min_supported_version=0, max_supported_version=1)]),
        rec("ProducerIdsRecord", broker_id=1, broker_epoch=1, next_producer_id=5000),
        rec("FeatureLevelRecord", name="group.version", feature_level=1),
    ]:
        delta.replay(r, 0)
    return delta.apply()


def test_the_leaves_of_acls_quotas_scram_tokens_controllers_and_producer_ids() -> None:
    node = root(_image_with_everything(), Provenance(0, 1, 0))

    def text(*path: str) -> list[str]:
        n = node
        for part in path:
            n = n.child(part)
        return list(n.lines())

    # AclsImageByIdNode mounted as "acls": StandardAcl.toString
    assert text("image", "acls", str(Uuid.of(1, 1))) == [
        "StandardAcl(resourceType=TOPIC, resourceName=foo, patternType=PREFIXED, principal=User:alice, host=*, "
        "operation=WRITE, permissionType=DENY)"]
    # ClientQuotasImageNode names the entity; ClientQuotaImageNode prints Java's Double.toString
    assert node.child("image").child("clientQuotas").child_names() == ["clientId(<default>)_user(alice)"]
    assert text("image", "clientQuotas", "clientId(<default>)_user(alice)", "producer_byte_rate") == ["1.0E7"]
    # ScramCredentialDataNode: redacted (metalog never shows a salt or a key)
    assert text("image", "scram", "SCRAM-SHA-256", "alice") == [
        "ScramCredentialData(salt=[redacted], storedKey=[redacted], serverKey=[redacted], iterations=[redacted])"]
    assert text("image", "delegationToken", "tok") == [
        "DelegationTokenDatatokenId=tok(owner=User:alice(tokenRequester=[redacted](renewers=[redacted], "
        "issueTimestamp=[redacted], maxTimestamp=[redacted]), expiryTimestamp=[redacted]"]
    # ClusterImageControllersNode -> ControllerRegistration.toString
    assert text("image", "cluster", "controllers", "3000") == [
        f"ControllerRegistration(id=3000, incarnationId={Uuid.of(5, 5)}, zkMigrationReady=false, listeners=["
        "Endpoint(listenerName='CONTROLLER', securityProtocol=PLAINTEXT, host='c', port=9093)], "
        "supportedFeatures={kraft.version: 0-1})"]
    assert text("image", "producerIds", "nextProducerId") == ["5000"]
    assert text("image", "features", "finalized_group.version") == ["1"]


@pytest.mark.parametrize(("value", "java"), [
    (1024.0, "1024.0"), (10000000.0, "1.0E7"), (1e7 - 1, "9999999.0"), (0.001, "0.001"), (0.0001, "1.0E-4"),
    (1.5e-05, "1.5E-5"), (123456789.0, "1.23456789E8"), (-2.5e10, "-2.5E10"), (0.0, "0.0"), (-0.0, "-0.0"),
    (float("inf"), "Infinity"), (float("nan"), "NaN"),
])
def test_java_double_to_string(value: float, java: str) -> None:
    assert java_double(value) == java


def test_iso_zoned_date_time_and_version_ranges() -> None:
    assert iso_zoned(1700000000000) == "2023-11-14T22:13:20Z[UTC]"
    assert iso_zoned(1700000000500) == "2023-11-14T22:13:20.5Z[UTC]"
    assert iso_zoned(1700000000123) == "2023-11-14T22:13:20.123Z[UTC]"
    assert (version_range(3, 3), version_range(1, 32767), version_range(1, 17)) == ("3", "1+", "1-17")


@pytest.mark.parametrize("command", [
    "history /image/topics/byName/foo/\u00b2", "history /image/cluster/brokers/99999999999", "history " + "9" * 5000,
    "history /image/topics/byName/foo/" + "1" * 5000,
])
def test_a_number_no_int32_holds_is_a_name_not_a_traceback(shell, command: str) -> None:
    # a superscript two is a digit to str.isdigit and not to int(); 5,000 digits are more than int() reads
    ok, out, err = run(shell, command)
    assert ok or err.count("\n") == 1
