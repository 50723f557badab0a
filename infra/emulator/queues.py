"""The dispatch queue on the local emulator.

    queues.py create                       creates the queue and its dead-letter queue, prints the URL
    queues.py send ROUTER_ID OBJECT_ID     sends one dispatch message

Reads AWS_ENDPOINT_URL; test credentials and us-east-1 are the defaults.
"""
import json
import os
import sys

import boto3

QUEUE = "account-routing-dispatch"
DLQ = "account-routing-dispatch-dlq"


def client():
    return boto3.client(
        "sqs",
        endpoint_url=os.environ["AWS_ENDPOINT_URL"],
        region_name=os.environ.get("AWS_REGION", "us-east-1"),
        aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "test"),
        aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "test"),
    )


def create():
    sqs = client()
    dlq = sqs.create_queue(QueueName=DLQ)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    redrive = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": "3"})
    url = sqs.create_queue(QueueName=QUEUE, Attributes={"VisibilityTimeout": "30", "RedrivePolicy": redrive})
    print(url["QueueUrl"])


def send(router_id, object_id):
    sqs = client()
    url = sqs.get_queue_url(QueueName=QUEUE)["QueueUrl"]
    body = json.dumps({"router_id": router_id, "object_id": object_id})
    print(sqs.send_message(QueueUrl=url, MessageBody=body)["MessageId"])


if __name__ == "__main__":
    if sys.argv[1:2] == ["create"]:
        create()
    elif sys.argv[1:2] == ["send"] and len(sys.argv) == 4:
        send(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
