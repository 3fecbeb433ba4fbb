"""Requests and responses between controllers and brokers.

Facts only: names, types, versions, tags and defaults, as Kafka's message format defines them.
"""

from metalog.codec.schema import NULL, F, Message, Struct

METADATA_REQUEST = Message(
    'MetadataRequest', 'request', api_key=3, valid='0-12', flexible='9+', listeners=('zkBroker', 'broker'),
    deprecated='0-3',
    fields=(
        F('Topics', '[]MetadataRequestTopic', '0+', nullable='1+', fields=(
            F('TopicId', 'uuid', '10+', ignorable=True),
            F('Name', 'string', '0+', nullable='10+', entity='topicName'),
        )),
        F('AllowAutoTopicCreation', 'bool', '4+', default=True),
        F('IncludeClusterAuthorizedOperations', 'bool', '8-10'),
        F('IncludeTopicAuthorizedOperations', 'bool', '8+'),
    ),
)

METADATA_RESPONSE = Message(
    'MetadataResponse', 'response', api_key=3, valid='0-12', flexible='9+',
    fields=(
        F('ThrottleTimeMs', 'int32', '3+', ignorable=True),
        F('Brokers', '[]MetadataResponseBroker', '0+', fields=(
            F('NodeId', 'int32', '0+', entity='brokerId', map_key=True),
            F('Host', 'string', '0+'),
            F('Port', 'int32', '0+'),
            F('Rack', 'string', '1+', nullable='1+', default=NULL, ignorable=True),
        )),
        F('ClusterId', 'string', '2+', nullable='2+', default=NULL, ignorable=True),
        F('ControllerId', 'int32', '1+', default=-1, ignorable=True, entity='brokerId'),
        F('Topics', '[]MetadataResponseTopic', '0+', fields=(
            F('ErrorCode', 'int16', '0+'),
            F('Name', 'string', '0+', nullable='12+', entity='topicName', map_key=True),
            F('TopicId', 'uuid', '10+', ignorable=True),
            F('IsInternal', 'bool', '1+', default=False, ignorable=True),
            F('Partitions', '[]MetadataResponsePartition', '0+', fields=(
                F('ErrorCode', 'int16', '0+'),
                F('PartitionIndex', 'int32', '0+'),
                F('LeaderId', 'int32', '0+', entity='brokerId'),
                F('LeaderEpoch', 'int32', '7+', default=-1, ignorable=True),
                F('ReplicaNodes', '[]int32', '0+', entity='brokerId'),
                F('IsrNodes', '[]int32', '0+', entity='brokerId'),
                F('OfflineReplicas', '[]int32', '5+', ignorable=True, entity='brokerId'),
            )),
            F('TopicAuthorizedOperations', 'int32', '8+', default=-2147483648),
        )),
        F('ClusterAuthorizedOperations', 'int32', '8-10', default=-2147483648),
    ),
)

LEADER_AND_ISR_REQUEST = Message(
    'LeaderAndIsrRequest', 'request', api_key=4, valid='0-7', flexible='4+', listeners=('zkBroker',),
    fields=(
        F('ControllerId', 'int32', '0+', entity='brokerId'),
        F('isKRaftController', 'bool', '7+', default=False),
        F('ControllerEpoch', 'int32', '0+'),
        F('BrokerEpoch', 'int64', '2+', default=-1, ignorable=True),
        F('Type', 'int8', '5+'),
        F('UngroupedPartitionStates', '[]LeaderAndIsrPartitionState', '0-1'),
        F('TopicStates', '[]LeaderAndIsrTopicState', '2+', fields=(
            F('TopicName', 'string', '2+', entity='topicName'),
            F('TopicId', 'uuid', '5+', ignorable=True),
            F('PartitionStates', '[]LeaderAndIsrPartitionState', '2+'),
        )),
        F('LiveLeaders', '[]LeaderAndIsrLiveLeader', '0+', fields=(
            F('BrokerId', 'int32', '0+', entity='brokerId'),
            F('HostName', 'string', '0+'),
            F('Port', 'int32', '0+'),
        )),
    ),
    common_structs=(
        Struct('LeaderAndIsrPartitionState', '0+', fields=(
            F('TopicName', 'string', '0-1', ignorable=True, entity='topicName'),
            F('PartitionIndex', 'int32', '0+'),
            F('ControllerEpoch', 'int32', '0+'),
            F('Leader', 'int32', '0+', entity='brokerId'),
            F('LeaderEpoch', 'int32', '0+'),
            F('Isr', '[]int32', '0+', entity='brokerId'),
            F('PartitionEpoch', 'int32', '0+'),
            F('Replicas', '[]int32', '0+', entity='brokerId'),
            F('AddingReplicas', '[]int32', '3+', ignorable=True, entity='brokerId'),
            F('RemovingReplicas', '[]int32', '3+', ignorable=True, entity='brokerId'),
            F('IsNew', 'bool', '1+', default=False, ignorable=True),
            F('LeaderRecoveryState', 'int8', '6+', default=0),
        )),
    ),
)

LEADER_AND_ISR_RESPONSE = Message(
    'LeaderAndIsrResponse', 'response', api_key=4, valid='0-7', flexible='4+',
    fields=(
        F('ErrorCode', 'int16', '0+'),
        F('PartitionErrors', '[]LeaderAndIsrPartitionError', '0-4'),
        F('Topics', '[]LeaderAndIsrTopicError', '5+', fields=(
            F('TopicId', 'uuid', '5+', map_key=True),
            F('PartitionErrors', '[]LeaderAndIsrPartitionError', '5+'),
        )),
    ),
    common_structs=(
        Struct('LeaderAndIsrPartitionError', '0+', fields=(
            F('TopicName', 'string', '0-4', ignorable=True, entity='topicName'),
            F('PartitionIndex', 'int32', '0+'),
            F('ErrorCode', 'int16', '0+'),
        )),
    ),
)

UPDATE_METADATA_REQUEST = Message(
    'UpdateMetadataRequest', 'request', api_key=6, valid='0-8', flexible='6+', listeners=('zkBroker',),
    fields=(
        F('ControllerId', 'int32', '0+', entity='brokerId'),
        F('isKRaftController', 'bool', '8+', default=False),
        F('Type', 'int8', '8+', tagged='8+', tag=0, default=0),
        F('ControllerEpoch', 'int32', '0+'),
        F('BrokerEpoch', 'int64', '5+', default=-1, ignorable=True),
        F('UngroupedPartitionStates', '[]UpdateMetadataPartitionState', '0-4'),
        F('TopicStates', '[]UpdateMetadataTopicState', '5+', fields=(
            F('TopicName', 'string', '5+', entity='topicName'),
            F('TopicId', 'uuid', '7+', ignorable=True),
            F('PartitionStates', '[]UpdateMetadataPartitionState', '5+'),
        )),
        F('LiveBrokers', '[]UpdateMetadataBroker', '0+', fields=(
            F('Id', 'int32', '0+', entity='brokerId'),
            F('V0Host', 'string', '0', ignorable=True),
            F('V0Port', 'int32', '0', ignorable=True),
            F('Endpoints', '[]UpdateMetadataEndpoint', '1+', ignorable=True, fields=(
                F('Port', 'int32', '1+'),
                F('Host', 'string', '1+'),
                F('Listener', 'string', '3+', ignorable=True),
                F('SecurityProtocol', 'int16', '1+'),
            )),
            F('Rack', 'string', '2+', nullable='0+', ignorable=True),
        )),
    ),
    common_structs=(
        Struct('UpdateMetadataPartitionState', '0+', fields=(
            F('TopicName', 'string', '0-4', ignorable=True, entity='topicName'),
            F('PartitionIndex', 'int32', '0+'),
            F('ControllerEpoch', 'int32', '0+'),
            F('Leader', 'int32', '0+', entity='brokerId'),
            F('LeaderEpoch', 'int32', '0+'),
            F('Isr', '[]int32', '0+', entity='brokerId'),
            F('ZkVersion', 'int32', '0+'),
            F('Replicas', '[]int32', '0+', entity='brokerId'),
            F('OfflineReplicas', '[]int32', '4+', ignorable=True, entity='brokerId'),
        )),
    ),
)

UPDATE_METADATA_RESPONSE = Message(
    'UpdateMetadataResponse', 'response', api_key=6, valid='0-8', flexible='6+',
    fields=(
        F('ErrorCode', 'int16', '0+'),
    ),
)

BROKER_REGISTRATION_REQUEST = Message(
    'BrokerRegistrationRequest', 'request', api_key=62, valid='0-4', flexible='0+', listeners=('controller',),
    fields=(
        F('BrokerId', 'int32', '0+', entity='brokerId'),
        F('ClusterId', 'string', '0+'),
        F('IncarnationId', 'uuid', '0+'),
        F('Listeners', '[]Listener', '0+', fields=(
            F('Name', 'string', '0+', map_key=True),
            F('Host', 'string', '0+'),
            F('Port', 'uint16', '0+'),
            F('SecurityProtocol', 'int16', '0+'),
        )),
        F('Features', '[]Feature', '0+', fields=(
            F('Name', 'string', '0+', map_key=True),
            F('MinSupportedVersion', 'int16', '0+'),
            F('MaxSupportedVersion', 'int16', '0+'),
        )),
        F('Rack', 'string', '0+', nullable='0+'),
        F('IsMigratingZkBroker', 'bool', '1+', default=False),
        F('LogDirs', '[]uuid', '2+', ignorable=True),
        F('PreviousBrokerEpoch', 'int64', '3+', default=-1, ignorable=True),
    ),
)

BROKER_REGISTRATION_RESPONSE = Message(
    'BrokerRegistrationResponse', 'response', api_key=62, valid='0-4', flexible='0+',
    fields=(
        F('ThrottleTimeMs', 'int32', '0+'),
        F('ErrorCode', 'int16', '0+'),
        F('BrokerEpoch', 'int64', '0+', default=-1),
    ),
)

BROKER_HEARTBEAT_REQUEST = Message(
    'BrokerHeartbeatRequest', 'request', api_key=63, valid='0-1', flexible='0+', listeners=('controller',),
    fields=(
        F('BrokerId', 'int32', '0+', entity='brokerId'),
        F('BrokerEpoch', 'int64', '0+', default=-1),
        F('CurrentMetadataOffset', 'int64', '0+'),
        F('WantFence', 'bool', '0+'),
        F('WantShutDown', 'bool', '0+'),
        F('OfflineLogDirs', '[]uuid', '1+', tagged='1+', tag=0),
    ),
)

BROKER_HEARTBEAT_RESPONSE = Message(
    'BrokerHeartbeatResponse', 'response', api_key=63, valid='0-1', flexible='0+',
    fields=(
        F('ThrottleTimeMs', 'int32', '0+'),
        F('ErrorCode', 'int16', '0+'),
        F('IsCaughtUp', 'bool', '0+', default=False),
        F('IsFenced', 'bool', '0+', default=True),
        F('ShouldShutDown', 'bool', '0+'),
    ),
)

ASSIGN_REPLICAS_TO_DIRS_REQUEST = Message(
    'AssignReplicasToDirsRequest', 'request', api_key=73, valid='0', flexible='0+', listeners=('controller',),
    fields=(
        F('BrokerId', 'int32', '0+', entity='brokerId'),
        F('BrokerEpoch', 'int64', '0+', default=-1),
        F('Directories', '[]DirectoryData', '0+', fields=(
            F('Id', 'uuid', '0+'),
            F('Topics', '[]TopicData', '0+', fields=(
                F('TopicId', 'uuid', '0+'),
                F('Partitions', '[]PartitionData', '0+', fields=(
                    F('PartitionIndex', 'int32', '0+'),
                )),
            )),
        )),
    ),
)

ASSIGN_REPLICAS_TO_DIRS_RESPONSE = Message(
    'AssignReplicasToDirsResponse', 'response', api_key=73, valid='0', flexible='0+',
    fields=(
        F('ThrottleTimeMs', 'int32', '0+'),
        F('ErrorCode', 'int16', '0+'),
        F('Directories', '[]DirectoryData', '0+', fields=(
            F('Id', 'uuid', '0+'),
            F('Topics', '[]TopicData', '0+', fields=(
                F('TopicId', 'uuid', '0+'),
                F('Partitions', '[]PartitionData', '0+', fields=(
                    F('PartitionIndex', 'int32', '0+'),
                    F('ErrorCode', 'int16', '0+'),
                )),
            )),
        )),
    ),
)

ALL = (
    METADATA_REQUEST,
    METADATA_RESPONSE,
    LEADER_AND_ISR_REQUEST,
    LEADER_AND_ISR_RESPONSE,
    UPDATE_METADATA_REQUEST,
    UPDATE_METADATA_RESPONSE,
    BROKER_REGISTRATION_REQUEST,
    BROKER_REGISTRATION_RESPONSE,
    BROKER_HEARTBEAT_REQUEST,
    BROKER_HEARTBEAT_RESPONSE,
    ASSIGN_REPLICAS_TO_DIRS_REQUEST,
    ASSIGN_REPLICAS_TO_DIRS_RESPONSE,
)
