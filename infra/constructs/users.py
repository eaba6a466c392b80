"""Who may sign in: the Cognito user pool, its app clients and the evaluators group.

They outlive every deployment of the application (users, their passwords and their groups are data), so
they live with the data, and the API and the console reach them from their own stack.
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cognito as cognito
from constructs import Construct

from benchgen.settings import EVALUATORS_GROUP
from infra.constructs import set_logical_id


class Users(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)

        self.user_pool = cognito.UserPool(
            self,
            "UserPool",
            # Accounts are created by an administrator: benchmark authors and model owners are invited.
            self_sign_up_enabled=False,
            sign_in_aliases=cognito.SignInAliases(email=True, username=True),
            # People type their email address in whatever case comes to hand: it names one user.
            sign_in_case_sensitive=False,
            password_policy=cognito.PasswordPolicy(
                min_length=14,
                require_lowercase=True,
                require_uppercase=True,
                require_digits=True,
                require_symbols=True,
                temp_password_validity=Duration.days(3),
            ),
            mfa=cognito.Mfa.OPTIONAL,
            mfa_second_factor=cognito.MfaSecondFactor(otp=True, sms=False),
            account_recovery=cognito.AccountRecovery.EMAIL_ONLY,
            feature_plan=cognito.FeaturePlan.PLUS,
            standard_threat_protection_mode=cognito.StandardThreatProtectionMode.FULL_FUNCTION,
            removal_policy=RemovalPolicy.RETAIN,
            deletion_protection=True,
        )
        set_logical_id(self.user_pool, "UserPool")
        self.user_pool_client = self.user_pool.add_client(
            "CommandLineClient",
            auth_flows=cognito.AuthFlow(user_srp=True, user_password=True),
            generate_secret=False,
            prevent_user_existence_errors=True,
        )
        set_logical_id(self.user_pool_client, "UserPoolClient")
        # The console signs in with InitiateAuth's USER_PASSWORD_AUTH, sending the password over TLS to
        # Cognito alone, and nothing else; no secret, since a page cannot keep one.
        self.console_client = self.user_pool.add_client(
            "ConsoleClient",
            auth_flows=cognito.AuthFlow(user_password=True),
            generate_secret=False,
            prevent_user_existence_errors=True,
            # The console signs in with InitiateAuth, not the hosted UI: no OAuth flow, no callback URL.
            disable_o_auth=True,
            access_token_validity=Duration.hours(1),
            id_token_validity=Duration.hours(1),
            refresh_token_validity=Duration.hours(12),
            enable_token_revocation=True,
        )
        set_logical_id(self.console_client, "ConsoleUserPoolClient")
        # Evaluating a trained model is its own permission: an administrator adds users to this group.
        self.evaluators_group = cognito.CfnUserPoolGroup(
            self,
            "EvaluatorsGroup",
            user_pool_id=self.user_pool.user_pool_id,
            group_name=EVALUATORS_GROUP,
            description="Members may evaluate the models they trained on their packages' held-out cases",
        )
        self.evaluators_group.override_logical_id("EvaluatorsGroup")
