"""Control records and snapshot records of the KRaft log.

Facts only: names, types, versions, tags and defaults, as Kafka's message format defines them.
"""

from metalog.codec.schema import F, Message, Struct

K_RAFT_VERSION_RECORD = Message(
    'KRaftVersionRecord', 'data', valid='0', flexible='0+',
    fields=(
        F('Version', 'int16', '0+'),
        F('KRaftVersion', 'int16', '0+'),
    ),
)

LEADER_CHANGE_MESSAGE = Message(
    'LeaderChangeMessage', 'data', valid='0-1', flexible='0+',
    fields=(
        F('Version', 'int16', '0+'),
        F('LeaderId', 'int32', '0+', entity='brokerId'),
        F('Voters', '[]Voter', '0+'),
        F('GrantingVoters', '[]Voter', '0+'),
    ),
    common_structs=(
        Struct('Voter', '0+', fields=(
            F('VoterId', 'int32', '0+'),
            F('VoterDirectoryId', 'uuid', '1+'),
        )),
    ),
)

SNAPSHOT_FOOTER_RECORD = Message(
    'SnapshotFooterRecord', 'data', valid='0', flexible='0+',
    fields=(
        F('Version', 'int16', '0+'),
    ),
)

SNAPSHOT_HEADER_RECORD = Message(
    'SnapshotHeaderRecord', 'data', valid='0', flexible='0+',
    fields=(
        F('Version', 'int16', '0+'),
        F('LastContainedLogTimestamp', 'int64', '0+'),
    ),
)

VOTERS_RECORD = Message(
    'VotersRecord', 'data', valid='0', flexible='0+',
    fields=(
        F('Version', 'int16', '0+'),
        F('Voters', '[]Voter', '0+', fields=(
            F('VoterId', 'int32', '0+', entity='brokerId'),
            F('VoterDirectoryId', 'uuid', '0+'),
            F('Endpoints', '[]Endpoint', '0+', fields=(
                F('Name', 'string', '0+', map_key=True),
                F('Host', 'string', '0+'),
                F('Port', 'uint16', '0+'),
            )),
            F('KRaftVersionFeature', 'KRaftVersionFeature', '0+', fields=(
                F('MinSupportedVersion', 'int16', '0+'),
                F('MaxSupportedVersion', 'int16', '0+'),
            )),
        )),
    ),
)

ALL = (
    K_RAFT_VERSION_RECORD,
    LEADER_CHANGE_MESSAGE,
    SNAPSHOT_FOOTER_RECORD,
    SNAPSHOT_HEADER_RECORD,
    VOTERS_RECORD,
)
