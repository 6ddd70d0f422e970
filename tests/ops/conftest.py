"""moto fixtures for the operator CLI: one account, the table, the secrets, a distribution,
and canned Cost Explorer answers."""

from __future__ import annotations

import json

import boto3
import pytest
import requests
from moto import mock_aws

from local.engine.tables import create_ledger_table
from steps.lib.runtime.settings import Settings

REGION = "us-east-1"
TABLE = "chatguard"


@pytest.fixture
def aws_env(monkeypatch):
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        yield boto3.Session(region_name=REGION)


@pytest.fixture
def settings():
    return Settings(table_name=TABLE)


@pytest.fixture
def dynamodb(aws_env):
    client = aws_env.client("dynamodb")
    create_ledger_table(client, TABLE)
    return client


def secret_json(current: str, previous: str | None, rotated_at: int) -> str:
    return json.dumps({"current": current, "previous": previous, "rotated_at": rotated_at})


@pytest.fixture
def ssm(aws_env, settings):
    client = aws_env.client("ssm")
    for name in (settings.origin_secret_param, settings.salt_param, settings.signing_key_param):
        client.put_parameter(
            Name=name,
            Value=secret_json("a" * 43, None, 1_700_000_000),
            Type="SecureString",
            KeyId="alias/chatguard",
        )
    return client


def distribution_config(secret: str) -> dict:
    origin = {
        "Id": "api-origin",
        "DomainName": "abc123.execute-api.us-east-1.amazonaws.com",
        "OriginPath": "/prod",
        "CustomHeaders": {
            "Quantity": 1,
            "Items": [{"HeaderName": "X-Origin-Verify", "HeaderValue": secret}],
        },
        "CustomOriginConfig": {
            "HTTPPort": 80,
            "HTTPSPort": 443,
            "OriginProtocolPolicy": "https-only",
        },
    }
    site = {
        "Id": "site-origin",
        "DomainName": "site.example.com",
        "CustomOriginConfig": {
            "HTTPPort": 80,
            "HTTPSPort": 443,
            "OriginProtocolPolicy": "https-only",
        },
    }
    return {
        "CallerReference": "chatguard-test",
        "Origins": {"Quantity": 2, "Items": [site, origin]},
        "DefaultCacheBehavior": {
            "TargetOriginId": "site-origin",
            "ViewerProtocolPolicy": "redirect-to-https",
        },
        "Comment": "chatguard",
        "Enabled": True,
    }


@pytest.fixture
def cloudfront(aws_env):
    client = aws_env.client("cloudfront")
    created = client.create_distribution(DistributionConfig=distribution_config("a" * 43))
    return client, created["Distribution"]["Id"]


def cost_group(service, amount):
    return {"Keys": [service], "Metrics": {"UnblendedCost": {"Amount": amount, "Unit": "USD"}}}


def canned_costs(groups_by_period):
    results = {
        "results": [
            {
                "ResultsByTime": [
                    {
                        "TimePeriod": {"Start": "2026-12-16", "End": "2027-01-01"},
                        "Total": {},
                        "Groups": groups_by_period[0],
                        "Estimated": False,
                    },
                    {
                        "TimePeriod": {"Start": "2027-01-01", "End": "2027-01-15"},
                        "Total": {},
                        "Groups": groups_by_period[1],
                        "Estimated": True,
                    },
                ],
                "DimensionValueAttributes": [],
            }
        ]
    }
    # moto's own API for canned Cost Explorer answers (intercepted in-process by mock_aws).
    response = requests.post(
        "http://motoapi.amazonaws.com/moto-api/static/ce/cost-and-usage-results", json=results
    )
    assert response.status_code == 201


# The name model spend bills under when it arrives through AWS Marketplace.
MARKETPLACE = "Claude Haiku 4.5 (Amazon Bedrock Edition)"
