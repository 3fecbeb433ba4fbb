"""KRaft metadata records (the values in __cluster_metadata).

Facts only: names, types, versions, tags and defaults, as Kafka's message format defines them.
"""

from metalog.codec.schema import NULL, F, Message

REGISTER_BROKER_RECORD = Message(
    'RegisterBrokerRecord', 'metadata', api_key=0, valid='0-3', flexible='0+',
    fields=(
        F('BrokerId', 'int32', '0+', entity='brokerId'),
        F('IsMigratingZkBroker', 'bool', '2+', default=False),
        F('IncarnationId', 'uuid', '0+'),
        F('BrokerEpoch', 'int64', '0+'),
        F('EndPoints', '[]BrokerEndpoint', '0+', fields=(
            F('Name', 'string', '0+', map_key=True),
            F('Host', 'string', '0+'),
            F('Port', 'uint16', '0+'),
            F('SecurityProtocol', 'int16', '0+'),
        )),
        F('Features', '[]BrokerFeature', '0+', fields=(
            F('Name', 'string', '0+', map_key=True),
            F('MinSupportedVersion', 'int16', '0+'),
            F('MaxSupportedVersion', 'int16', '0+'),
        )),
        F('Rack', 'string', '0+', nullable='0+'),
        F('Fenced', 'bool', '0+', default=True),
        F('InControlledShutdown', 'bool', '1+', default=False),
        F('LogDirs', '[]uuid', '3+', tagged='3+', tag=0),
    ),
)

UNREGISTER_BROKER_RECORD = Message(
    'UnregisterBrokerRecord', 'metadata', api_key=1, valid='0', flexible='0+',
    fields=(
        F('BrokerId', 'int32', '0+', entity='brokerId'),
        F('BrokerEpoch', 'int64', '0+'),
    ),
)

TOPIC_RECORD = Message(
    'TopicRecord', 'metadata', api_key=2, valid='0', flexible='0+',
    fields=(
        F('Name', 'string', '0+', entity='topicName'),
        F('TopicId', 'uuid', '0+'),
    ),
)

PARTITION_RECORD = Message(
    'PartitionRecord', 'metadata', api_key=3, valid='0-2', flexible='0+',
    fields=(
        F('PartitionId', 'int32', '0+', default=-1),
        F('TopicId', 'uuid', '0+'),
        F('Replicas', '[]int32', '0+', entity='brokerId'),
        F('Isr', '[]int32', '0+'),
        F('RemovingReplicas', '[]int32', '0+', entity='brokerId'),
        F('AddingReplicas', '[]int32', '0+', entity='brokerId'),
        F('Leader', 'int32', '0+', default=-1, entity='brokerId'),
        F('LeaderRecoveryState', 'int8', '0+', tagged='0+', tag=0, default=0),
        F('LeaderEpoch', 'int32', '0+', default=-1),
        F('PartitionEpoch', 'int32', '0+', default=-1),
        F('Directories', '[]uuid', '1+'),
        F('EligibleLeaderReplicas', '[]int32', '2+', nullable='2+', tagged='2+', tag=1, default=NULL,
          entity='brokerId'),
        F('LastKnownElr', '[]int32', '2+', nullable='2+', tagged='2+', tag=2, default=NULL, entity='brokerId'),
    ),
)

CONFIG_RECORD = Message(
    'ConfigRecord', 'metadata', api_key=4, valid='0', flexible='0+',
    fields=(
        F('ResourceType', 'int8', '0+'),
        F('ResourceName', 'string', '0+'),
        F('Name', 'string', '0+'),
        F('Value', 'string', '0+', nullable='0+'),
    ),
)

PARTITION_CHANGE_RECORD = Message(
    'PartitionChangeRecord', 'metadata', api_key=5, valid='0-2', flexible='0+',
    fields=(
        F('PartitionId', 'int32', '0+', default=-1),
        F('TopicId', 'uuid', '0+'),
        F('Isr', '[]int32', '0+', nullable='0+', tagged='0+', tag=0, default=NULL, entity='brokerId'),
        F('Leader', 'int32', '0+', tagged='0+', tag=1, default=-2, entity='brokerId'),
        F('Replicas', '[]int32', '0+', nullable='0+', tagged='0+', tag=2, default=NULL, entity='brokerId'),
        F('RemovingReplicas', '[]int32', '0+', nullable='0+', tagged='0+', tag=3, default=NULL, entity='brokerId'),
        F('AddingReplicas', '[]int32', '0+', nullable='0+', tagged='0+', tag=4, default=NULL, entity='brokerId'),
        F('LeaderRecoveryState', 'int8', '0+', tagged='0+', tag=5, default=-1),
        F('Directories', '[]uuid', '1+', nullable='1+', tagged='1+', tag=8, default=NULL),
        F('EligibleLeaderReplicas', '[]int32', '2+', nullable='2+', tagged='2+', tag=6, default=NULL,
          entity='brokerId'),
        F('LastKnownElr', '[]int32', '2+', nullable='2+', tagged='2+', tag=7, default=NULL, entity='brokerId'),
    ),
)

FENCE_BROKER_RECORD = Message(
    'FenceBrokerRecord', 'metadata', api_key=7, valid='0', flexible='0+',
    fields=(
        F('Id', 'int32', '0+', entity='brokerId'),
        F('Epoch', 'int64', '0+'),
    ),
)

UNFENCE_BROKER_RECORD = Message(
    'UnfenceBrokerRecord', 'metadata', api_key=8, valid='0', flexible='0+',
    fields=(
        F('Id', 'int32', '0+', entity='brokerId'),
        F('Epoch', 'int64', '0+'),
    ),
)

REMOVE_TOPIC_RECORD = Message(
    'RemoveTopicRecord', 'metadata', api_key=9, valid='0', flexible='0+',
    fields=(
        F('TopicId', 'uuid', '0+'),
    ),
)

DELEGATION_TOKEN_RECORD = Message(
    'DelegationTokenRecord', 'metadata', api_key=10, valid='0', flexible='0+',
    fields=(
        F('Owner', 'string', '0+'),
        F('Requester', 'string', '0+'),
        F('Renewers', '[]string', '0+'),
        F('IssueTimestamp', 'int64', '0+'),
        F('MaxTimestamp', 'int64', '0+'),
        F('ExpirationTimestamp', 'int64', '0+'),
        F('TokenId', 'string', '0+'),
    ),
)

USER_SCRAM_CREDENTIAL_RECORD = Message(
    'UserScramCredentialRecord', 'metadata', api_key=11, valid='0', flexible='0+',
    fields=(
        F('Name', 'string', '0+'),
        F('Mechanism', 'int8', '0+'),
        F('Salt', 'bytes', '0+'),
        F('StoredKey', 'bytes', '0+'),
        F('ServerKey', 'bytes', '0+'),
        F('Iterations', 'int32', '0+'),
    ),
)

FEATURE_LEVEL_RECORD = Message(
    'FeatureLevelRecord', 'metadata', api_key=12, valid='0', flexible='0+',
    fields=(
        F('Name', 'string', '0+'),
        F('FeatureLevel', 'int16', '0+'),
    ),
)

CLIENT_QUOTA_RECORD = Message(
    'ClientQuotaRecord', 'metadata', api_key=14, valid='0', flexible='0+',
    fields=(
        F('Entity', '[]EntityData', '0+', fields=(
            F('EntityType', 'string', '0+'),
            F('EntityName', 'string', '0+', nullable='0+'),
        )),
        F('Key', 'string', '0+'),
        F('Value', 'float64', '0+'),
        F('Remove', 'bool', '0+'),
    ),
)

PRODUCER_IDS_RECORD = Message(
    'ProducerIdsRecord', 'metadata', api_key=15, valid='0', flexible='0+',
    fields=(
        F('BrokerId', 'int32', '0+', entity='brokerId'),
        F('BrokerEpoch', 'int64', '0+', default=-1),
        F('NextProducerId', 'int64', '0+'),
    ),
)

BROKER_REGISTRATION_CHANGE_RECORD = Message(
    'BrokerRegistrationChangeRecord', 'metadata', api_key=17, valid='0-2', flexible='0+',
    fields=(
        F('BrokerId', 'int32', '0+', entity='brokerId'),
        F('BrokerEpoch', 'int64', '0+'),
        F('Fenced', 'int8', '0+', tagged='0+', tag=0),
        F('InControlledShutdown', 'int8', '1+', tagged='1+', tag=1),
        F('LogDirs', '[]uuid', '2+', tagged='2+', tag=2),
    ),
)

ACCESS_CONTROL_ENTRY_RECORD = Message(
    'AccessControlEntryRecord', 'metadata', api_key=18, valid='0', flexible='0+',
    fields=(
        F('Id', 'uuid', '0+'),
        F('ResourceType', 'int8', '0+'),
        F('ResourceName', 'string', '0+'),
        F('PatternType', 'int8', '0+'),
        F('Principal', 'string', '0+'),
        F('Host', 'string', '0+'),
        F('Operation', 'int8', '0+'),
        F('PermissionType', 'int8', '0+'),
    ),
)

REMOVE_ACCESS_CONTROL_ENTRY_RECORD = Message(
    'RemoveAccessControlEntryRecord', 'metadata', api_key=19, valid='0', flexible='0+',
    fields=(
        F('Id', 'uuid', '0+'),
    ),
)

NO_OP_RECORD = Message(
    'NoOpRecord', 'metadata', api_key=20, valid='0', flexible='0+',
    fields=(
    ),
)

ZK_MIGRATION_STATE_RECORD = Message(
    'ZkMigrationStateRecord', 'metadata', api_key=21, valid='0', flexible='0+',
    fields=(
        F('ZkMigrationState', 'int8', '0+'),
    ),
)

REMOVE_USER_SCRAM_CREDENTIAL_RECORD = Message(
    'RemoveUserScramCredentialRecord', 'metadata', api_key=22, valid='0', flexible='0+',
    fields=(
        F('Name', 'string', '0+'),
        F('Mechanism', 'int8', '0+'),
    ),
)

BEGIN_TRANSACTION_RECORD = Message(
    'BeginTransactionRecord', 'metadata', api_key=23, valid='0', flexible='0+',
    fields=(
        F('Name', 'string', '0+', nullable='0+', tagged='0+', tag=0, default=NULL),
    ),
)

END_TRANSACTION_RECORD = Message(
    'EndTransactionRecord', 'metadata', api_key=24, valid='0', flexible='0+',
    fields=(
    ),
)

ABORT_TRANSACTION_RECORD = Message(
    'AbortTransactionRecord', 'metadata', api_key=25, valid='0', flexible='0+',
    fields=(
        F('Reason', 'string', '0+', nullable='0+', tagged='0+', tag=0, default=NULL),
    ),
)

REMOVE_DELEGATION_TOKEN_RECORD = Message(
    'RemoveDelegationTokenRecord', 'metadata', api_key=26, valid='0', flexible='0+',
    fields=(
        F('TokenId', 'string', '0+'),
    ),
)

REGISTER_CONTROLLER_RECORD = Message(
    'RegisterControllerRecord', 'metadata', api_key=27, valid='0', flexible='0+',
    fields=(
        F('ControllerId', 'int32', '0+'),
        F('IncarnationId', 'uuid', '0+'),
        F('ZkMigrationReady', 'bool', '0+'),
        F('EndPoints', '[]ControllerEndpoint', '0+', fields=(
            F('Name', 'string', '0+', map_key=True),
            F('Host', 'string', '0+'),
            F('Port', 'uint16', '0+'),
            F('SecurityProtocol', 'int16', '0+'),
        )),
        F('Features', '[]ControllerFeature', '0+', fields=(
            F('Name', 'string', '0+', map_key=True),
            F('MinSupportedVersion', 'int16', '0+'),
            F('MaxSupportedVersion', 'int16', '0+'),
        )),
    ),
)

ALL = (
    REGISTER_BROKER_RECORD,
    UNREGISTER_BROKER_RECORD,
    TOPIC_RECORD,
    PARTITION_RECORD,
    CONFIG_RECORD,
    PARTITION_CHANGE_RECORD,
    FENCE_BROKER_RECORD,
    UNFENCE_BROKER_RECORD,
    REMOVE_TOPIC_RECORD,
    DELEGATION_TOKEN_RECORD,
    USER_SCRAM_CREDENTIAL_RECORD,
    FEATURE_LEVEL_RECORD,
    CLIENT_QUOTA_RECORD,
    PRODUCER_IDS_RECORD,
    BROKER_REGISTRATION_CHANGE_RECORD,
    ACCESS_CONTROL_ENTRY_RECORD,
    REMOVE_ACCESS_CONTROL_ENTRY_RECORD,
    NO_OP_RECORD,
    ZK_MIGRATION_STATE_RECORD,
    REMOVE_USER_SCRAM_CREDENTIAL_RECORD,
    BEGIN_TRANSACTION_RECORD,
    END_TRANSACTION_RECORD,
    ABORT_TRANSACTION_RECORD,
    REMOVE_DELEGATION_TOKEN_RECORD,
    REGISTER_CONTROLLER_RECORD,
)
