"""Request and response headers.

Facts only: names, types, versions, tags and defaults, as Kafka's message format defines them.
"""

from metalog.codec.schema import F, Message

REQUEST_HEADER = Message(
    'RequestHeader', 'header', valid='0-2', flexible='2+',
    fields=(
        F('RequestApiKey', 'int16', '0+'),
        F('RequestApiVersion', 'int16', '0+'),
        F('CorrelationId', 'int32', '0+'),
        F('ClientId', 'string', '1+', nullable='1+', ignorable=True, flexible='none'),
    ),
)

RESPONSE_HEADER = Message(
    'ResponseHeader', 'header', valid='0-1', flexible='1+',
    fields=(
        F('CorrelationId', 'int32', '0+'),
    ),
)

ALL = (
    REQUEST_HEADER,
    RESPONSE_HEADER,
)
